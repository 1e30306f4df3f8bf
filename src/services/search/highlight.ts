/**
 * Highlights of search hits: where the query's words occur in a chunk, with the passage around each, cut
 * at word boundaries as the search-highlight task (documents/highlight.ts) cuts its passages. Words
 * match whole and case-insensitively, as the full-text index matches them.
 */
import { queryWords } from './query-words.ts';

export interface TermHighlight {
  term: string;
  start: number;
  end: number;
  passage: string;
}

const CONTEXT = 60;
const MAX = 5;

/** The bounds of the passage around `[start, end)`: up to `ctx` characters either side, cut at word boundaries. */
export function passageBounds(s: string, start: number, end: number, ctx: number): [number, number] {
  let a = Math.max(0, start - ctx), b = Math.min(s.length, end + ctx);
  if (a > 0) {
    const sp = s.slice(a, start).search(/\s/);
    if (sp >= 0) a += sp + 1;
  }
  if (b < s.length) {
    const sp = s.slice(end, b).search(/\s\S*$/);
    if (sp >= 0) b = end + sp;
  }
  return [a, b];
}

function passageOf(s: string, start: number, end: number, ctx: number): string {
  const [a, b] = passageBounds(s, start, end, ctx);
  return `${a > 0 ? '…' : ''}${s.slice(a, start)}<em>${s.slice(start, end)}</em>${s.slice(end, b)}${b < s.length ? '…' : ''}`.replace(
    /\s+/g,
    ' ',
  );
}

export function highlightTerms(text: string, query: string, max = MAX): TermHighlight[] {
  const words = queryWords(query, 32);
  const found: TermHighlight[] = [];
  for (const w of words) {
    const bounded = new RegExp(`(?<![\\p{L}\\p{N}])${w}(?![\\p{L}\\p{N}])`, 'giu');
    for (const m of text.matchAll(bounded)) {
      found.push({ term: m[0], start: m.index!, end: m.index! + m[0].length, passage: '' });
      if (found.length >= 50) break;
    }
  }
  found.sort((a, b) => a.start - b.start);
  return found.slice(0, max).map((h) => ({ ...h, passage: passageOf(text, h.start, h.end, CONTEXT) }));
}
