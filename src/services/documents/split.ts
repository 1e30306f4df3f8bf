/**
 * Splitting an analysed document into retrieval chunks: by pages, by headings (sections), or by size in
 * tokens with overlap. Each chunk carries its Markdown, source pages and heading path.
 *
 * Tokens are counted without a model tokenizer: a token is a run of letters/digits or one other
 * non-space character (`\p{L}+|\p{N}+|[^\s\p{L}\p{N}]`), which tracks BPE counts of English prose
 * within about ±25% and never depends on which model the chunks go to.
 */
import { invalidArgument } from '../errors.ts';
import { type DocElement, elementsToMarkdown } from './elements.ts';

export type SplitStrategy = 'pages' | 'headings' | 'tokens';

export interface SplitOptions {
  strategy: SplitStrategy;
  /** tokens: chunk size (default 512); headings: sections longer than this are cut further (default none) */
  maxTokens?: number;
  /** tokens of the previous chunk repeated at the start of the next (default 64; tokens strategy and cut sections) */
  overlap?: number;
  /** pages: pages per chunk (default 1) */
  pagesPerChunk?: number;
}

export interface Chunk {
  index: number;
  text: string;
  pages: number[];
  heading_path: string[];
  tokens: number;
}

const TOKEN = /\p{L}+|\p{N}+|[^\s\p{L}\p{N}]/gu;
export const countTokens = (s: string) => (s.match(TOKEN) ?? []).length;

interface Piece {
  md: string;
  page: number | null;
  path: string[];
  tokens: number;
  heading: boolean;
}

function pieces(elements: DocElement[]): Piece[] {
  const path: { level: number; text: string }[] = [];
  const out: Piece[] = [];
  for (const e of elements) {
    if (e.type === 'page_header' || e.type === 'page_footer') continue;
    const heading = e.type === 'title' || e.type === 'section_header';
    if (heading) {
      const level = e.type === 'title' ? 1 : (e.level ?? 2);
      while (path.length && path[path.length - 1]!.level >= level) path.pop();
      path.push({ level, text: e.text.replace(/\s+/g, ' ').trim() });
    }
    const md = elementsToMarkdown([e]).trim();
    if (!md) continue;
    out.push({ md, page: e.page, path: path.map((p) => p.text), tokens: countTokens(md), heading });
  }
  return out;
}

const pagesOf = (ps: Piece[]) => [...new Set(ps.map((p) => p.page).filter((p): p is number => p !== null))].sort((a, b) => a - b);
const joinMd = (ps: Piece[]) =>
  ps.map((p, i) => (i && /^- |^\d+\. /.test(p.md) && /^- |^\d+\. /.test(ps[i - 1]!.md) ? `\n${p.md}` : `\n\n${p.md}`)).join('').trim();

export function splitElements(elements: DocElement[], opts: SplitOptions): Chunk[] {
  const ps = pieces(elements);
  const chunks: Omit<Chunk, 'index'>[] = [];
  const push = (group: Piece[], path?: string[]) => {
    if (!group.length) return;
    const text = joinMd(group);
    chunks.push({ text, pages: pagesOf(group), heading_path: path ?? group[0]!.path, tokens: countTokens(text) });
  };
  if (opts.strategy === 'pages') {
    const per = opts.pagesPerChunk ?? 1;
    if (!(Number.isInteger(per) && per >= 1)) throw invalidArgument('pages_per_chunk: a positive integer.');
    const byChunk = new Map<number, Piece[]>();
    for (const p of ps) {
      const key = p.page === null ? 0 : Math.floor((p.page - 1) / per);
      if (!byChunk.has(key)) byChunk.set(key, []);
      byChunk.get(key)!.push(p);
    }
    for (const [, group] of [...byChunk.entries()].sort((a, b) => a[0] - b[0])) push(group);
  } else if (opts.strategy === 'headings') {
    let cur: Piece[] = [];
    for (const p of ps) {
      if (p.heading && cur.length) {
        sized(cur);
        cur = [];
      }
      cur.push(p);
    }
    sized(cur);
  } else {
    sized(ps, true);
  }
  return chunks.map((c, index) => ({ index, ...c }));

  /** A group as one chunk, or cut by tokens when maxTokens is set (always for the tokens strategy). */
  function sized(group: Piece[], always = false) {
    const max = opts.maxTokens ?? (always ? 512 : Infinity);
    const overlap = opts.overlap ?? (always ? 64 : 0);
    if (!(max >= 16)) throw invalidArgument('max_tokens: 16 or more.');
    if (!(overlap >= 0 && overlap < max / 2)) throw invalidArgument('overlap: 0 or more and less than half of max_tokens.');
    if (group.reduce((s, p) => s + p.tokens, 0) <= max) {
      push(group);
      return;
    }
    let cur: Piece[] = [];
    let size = 0;
    const emit = () => {
      if (!cur.length) return;
      push(cur);
      const tail = overlap ? tailTokens(joinMd(cur), overlap) : '';
      const last = cur[cur.length - 1]!;
      cur = tail ? [{ md: tail, page: last.page, path: last.path, tokens: countTokens(tail), heading: false }] : [];
      size = cur[0]?.tokens ?? 0;
    };
    for (const p of group) {
      for (const part of p.tokens > max - overlap ? cutPiece(p, max - overlap) : [p]) {
        if (size + part.tokens > max && cur.length && !(cur.length === 1 && overlap && size <= overlap)) emit();
        cur.push(part);
        size += part.tokens;
      }
    }
    if (cur.length && !(cur.length === 1 && overlap && chunks.length && cur[0]!.tokens <= overlap)) push(cur);
  }
}

/** The text of the last n tokens of s (from the start of the n-th token from the end). */
function tailTokens(s: string, n: number): string {
  const starts = [...s.matchAll(TOKEN)].map((m) => m.index!);
  if (starts.length <= n) return s;
  return s.slice(starts[starts.length - n]!).trim();
}

/** A piece longer than max tokens, cut at word boundaries. */
function cutPiece(p: Piece, max: number): Piece[] {
  const out: Piece[] = [];
  const words = p.md.split(/(\s+)/);
  let cur = '', n = 0;
  for (const w of words) {
    const t = countTokens(w);
    if (n + t > max && cur.trim()) {
      out.push({ ...p, md: cur.trim(), tokens: n });
      cur = '';
      n = 0;
    }
    cur += w;
    n += t;
  }
  if (cur.trim()) out.push({ ...p, md: cur.trim(), tokens: countTokens(cur) });
  return out;
}
