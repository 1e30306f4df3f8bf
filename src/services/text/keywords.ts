/**
 * Keyphrases by RAKE (Rose et al. 2010): candidate phrases are runs of words between stop words and
 * punctuation; a word scores degree/frequency over the candidates, a phrase the sum of its words.
 * Phrases are reported with every character offset where they occur.
 */
export const KEYWORDS_METHOD = 'rake (rapid automatic keyword extraction, English stop list)';

const STOP = new Set((
  'a about above after again against all also am an and any are as at be because been before being below between both but by can ' +
  'could did do does doing down during each either else ever every few for from further had has have having he her here hers herself ' +
  'him himself his how however i if in into is it its itself just least less like made make many may me might more most much must my ' +
  'myself neither no nor not now of off often on once one only or other others our ours ourselves out over own per perhaps quite rather ' +
  'same shall she should since so some such than that the their theirs them themselves then there these they this those through thus ' +
  'to too under until up upon us used using very via was we well were what when where whether which while who whom whose why will with ' +
  'within without would yet you your yours yourself yourselves new get got also around across among'
).split(/\s+/));

export interface Keyphrase {
  text: string;
  score: number;
  count: number;
  offsets: { start: number; end: number }[];
}

const WORD = /[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu;
const BREAK = /[.,;:!?()[\]{}"“”«»\n\r\t|/\\]/;

export function keyphrases(text: string, o: { limit?: number; maxWords?: number } = {}): Keyphrase[] {
  const limit = o.limit ?? 10;
  const maxWords = o.maxWords ?? 4;
  const phrases: { words: string[]; start: number; end: number }[] = [];
  let cur: { words: string[]; start: number; end: number } | null = null;
  let last = 0;
  const close = () => {
    if (cur && cur.words.length <= maxWords) phrases.push(cur);
    cur = null;
  };
  for (const m of text.matchAll(WORD)) {
    const w = m[0].toLowerCase();
    const between = text.slice(last, m.index);
    if (BREAK.test(between)) close();
    last = m.index! + m[0].length;
    if (STOP.has(w) || /^\p{N}+$/u.test(w) || w.length < 2) {
      close();
      continue;
    }
    if (!cur) cur = { words: [], start: m.index!, end: 0 };
    cur.words.push(w);
    cur.end = last;
  }
  close();
  const freq = new Map<string, number>();
  const degree = new Map<string, number>();
  for (const p of phrases) {
    for (const w of p.words) {
      freq.set(w, (freq.get(w) ?? 0) + 1);
      degree.set(w, (degree.get(w) ?? 0) + p.words.length);
    }
  }
  const byText = new Map<string, Keyphrase>();
  for (const p of phrases) {
    const key = p.words.join(' ');
    let k = byText.get(key);
    if (!k) {
      const score = p.words.reduce((s, w) => s + degree.get(w)! / freq.get(w)!, 0);
      byText.set(key, k = { text: text.slice(p.start, p.end), score: Math.round(score * 1000) / 1000, count: 0, offsets: [] });
    }
    k.count++;
    k.offsets.push({ start: p.start, end: p.end });
  }
  // a phrase that occurs often ranks above a one-off of equal score
  return [...byText.values()].sort((a, b) =>
    b.score * Math.sqrt(b.count) - a.score * Math.sqrt(a.count) || a.offsets[0]!.start - b.offsets[0]!.start
  ).slice(0, limit);
}
