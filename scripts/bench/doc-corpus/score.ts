/**
 * Scores a Markdown rendering of a document against its ground-truth Markdown, the way OmniDocBench scores
 * document parsers: normalised text edit distance, reading-order edit distance over paragraphs, heading
 * precision/recall with level accuracy, table cell accuracy, code-line recall and running header/footer
 * leakage. The Markdown is split into blocks by its own small reader (not the product's), so the scorer
 * stays independent of the code it judges.
 */
export interface MdBlock {
  type: 'heading' | 'para' | 'list' | 'code' | 'table';
  text: string;
  level?: number;
  rows?: string[][];
  lines?: string[];
}

export function readBlocks(md: string): MdBlock[] {
  const lines = md.replace(/\r\n/g, '\n').split('\n');
  const out: MdBlock[] = [];
  let para: string[] = [];
  const flush = () => {
    if (para.length) out.push({ type: 'para', text: para.join(' ') });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (!l.trim()) {
      flush();
      continue;
    }
    if (/^```/.test(l)) {
      flush();
      const code: string[] = [];
      while (++i < lines.length && !/^```/.test(lines[i]!)) code.push(lines[i]!);
      out.push({ type: 'code', text: code.join('\n'), lines: code });
      continue;
    }
    const h = /^(#{1,6})\s+(.*)$/.exec(l);
    if (h) {
      flush();
      out.push({ type: 'heading', text: h[2]!.trim(), level: h[1]!.length });
      continue;
    }
    if (/^\s*\|/.test(l)) {
      flush();
      const rows: string[][] = [];
      for (; i < lines.length && /^\s*\|/.test(lines[i]!); i++) {
        const cells = lines[i]!.trim().replace(/^\||\|$/g, '').split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
        if (!cells.every((c) => /^:?-{3,}:?$/.test(c))) rows.push(cells);
      }
      i--;
      out.push({ type: 'table', text: rows.map((r) => r.join(' ')).join('\n'), rows });
      continue;
    }
    const li = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(l);
    if (li) {
      flush();
      out.push({ type: 'list', text: li[2]! });
      continue;
    }
    if (/^\$\$\s*$/.test(l) || /^<!--.*-->$/.test(l.trim())) continue;
    para.push(l.replace(/^\*(.*)\*$/, '$1'));
  }
  flush();
  return out;
}

const norm = (s: string) => s.normalize('NFKC').replace(/[*_`]/g, '').replace(/\s+/g, ' ').trim().toLowerCase();

/** Levenshtein distance (two rows). */
export function editDistance(a: string | number[], b: string | number[]): number {
  if (a.length < b.length) [a, b] = [b, a];
  let prev = new Int32Array(b.length + 1).map((_, i) => i), cur = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    const ai = a[i - 1];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ai === b[j - 1] ? 0 : 1));
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}
const ned = (a: string, b: string) => (a.length || b.length ? editDistance(a, b) / Math.max(a.length, b.length) : 0);

/** Character bigram Dice similarity: cheap block matching. */
function dice(a: string, b: string): number {
  const grams = (s: string) => {
    const m = new Map<string, number>();
    for (let i = 0; i < s.length - 1; i++) m.set(s.slice(i, i + 2), (m.get(s.slice(i, i + 2)) ?? 0) + 1);
    return m;
  };
  const ga = grams(a), gb = grams(b);
  let both = 0, na = 0, nb = 0;
  for (const v of ga.values()) na += v;
  for (const v of gb.values()) nb += v;
  for (const [k, v] of ga) both += Math.min(v, gb.get(k) ?? 0);
  return na + nb ? (2 * both) / (na + nb) : 1;
}

export interface Scores {
  text: number;
  order: number;
  headingP: number;
  headingR: number;
  headingF1: number;
  levels: number;
  tables: number | null;
  code: number | null;
  leakage: number;
}

/**
 * `running`: the running header/footer strings of the source; leakage counts their occurrences (and lone
 * page-number lines) in the output, per page.
 */
export function score(pred: string, truth: string, running: string[] = [], pages = 1): Scores {
  const P = readBlocks(pred), T = readBlocks(truth);
  const flat = (bs: MdBlock[]) => norm(bs.map((b) => (b.type === 'table' ? b.rows!.flat().join(' ') : b.text)).join(' '));
  const text = ned(flat(P), flat(T));

  // reading order: each truth text block matched to its most similar output block; the order of the matches
  const tb = T.filter((b) => b.type !== 'table'), pb = P.filter((b) => b.type !== 'table');
  const pos: number[] = [];
  tb.forEach((t) => {
    let best = -1, bs = 0.5;
    pb.forEach((p, j) => {
      const s = dice(norm(t.text), norm(p.text));
      if (s > bs) {
        bs = s;
        best = j;
      }
    });
    if (best >= 0) pos.push(best);
  });
  const rank = pos.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p || a.i - b.i).map((x) => x.i);
  const order = tb.length ? (editDistance(rank, rank.map((_, i) => i)) + (tb.length - pos.length)) / tb.length : 0;

  // headings
  const th = T.filter((b) => b.type === 'heading'), ph = P.filter((b) => b.type === 'heading');
  let matched = 0, levelOk = 0;
  const used = new Set<number>();
  for (const t of th) {
    const j = ph.findIndex((p, k) => !used.has(k) && ned(norm(p.text), norm(t.text)) <= 0.1);
    if (j < 0) continue;
    used.add(j);
    matched++;
    if (ph[j]!.level === t.level) levelOk++;
  }
  const headingP = ph.length ? matched / ph.length : th.length ? 0 : 1;
  const headingR = th.length ? matched / th.length : 1;
  const headingF1 = headingP + headingR ? (2 * headingP * headingR) / (headingP + headingR) : 0;
  const levels = matched ? levelOk / matched : th.length ? 0 : 1;

  // tables: share of truth cells found at the same row and column of the best-matching output table
  const tt = T.filter((b) => b.type === 'table'), pt = P.filter((b) => b.type === 'table');
  let tables: number | null = null;
  if (tt.length) {
    tables = tt.reduce((sum, t) => {
      const cells = t.rows!.flat().length;
      const best = Math.max(
        0,
        ...pt.map((p) =>
          t.rows!.reduce((s, r, ri) => s + r.filter((c, ci) => norm(p.rows![ri]?.[ci] ?? '') === norm(c)).length, 0) / cells
        ),
      );
      return sum + best;
    }, 0) / tt.length;
  }

  // code: share of truth code lines present, in a fenced block of the output
  const tc = T.filter((b) => b.type === 'code').flatMap((b) => b.lines!.map(norm).filter(Boolean));
  const pc = new Set(P.filter((b) => b.type === 'code').flatMap((b) => b.lines!.map(norm)));
  const code = tc.length ? tc.filter((l) => pc.has(l)).length / tc.length : null;

  // header/footer leakage
  const lower = pred.toLowerCase();
  let leaks = 0;
  for (const r of running) leaks += lower.split(r.toLowerCase()).length - 1 - (truth.toLowerCase().split(r.toLowerCase()).length - 1);
  leaks += pred.split('\n').filter((l) => /^\s*\d{1,4}\s*$/.test(l)).length;
  return { text, order, headingP, headingR, headingF1, levels, tables, code, leakage: Math.max(0, leaks) / pages };
}
