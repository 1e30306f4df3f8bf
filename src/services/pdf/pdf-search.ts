/** pdfSearch: text or regex matches with page and boxes, for highlighting. */
import { invalidArgument } from '../errors.ts';
import { assertPdf } from './open.ts';
import type { Box } from './page-frame.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';
import { loadPdfium, openDoc, type Pdfium } from './pdfium.ts';
import { loadTextPage, pageString, rangeRects } from './text-page.ts';

export interface SearchOptions {
  query: string;
  /** treat query as a JavaScript regular expression */
  regex?: boolean;
  caseSensitive?: boolean;
  pages?: PageSelection;
  password?: string;
  /** stop after this many matches (default 10000) */
  limit?: number;
}

export interface SearchMatch {
  /** 1-based */
  page: number;
  text: string;
  /** points, origin top-left of the displayed page; one box per line the match spans */
  boxes: Box[];
}

export async function pdfSearch(bytes: Uint8Array, opts: SearchOptions): Promise<{ matches: SearchMatch[]; truncated: boolean }> {
  const re = compileQuery(opts);
  assertPdf(bytes);
  const m = await loadPdfium();
  const d = openDoc(m, bytes, opts.password);
  try {
    const limit = opts.limit ?? 10_000;
    const matches: SearchMatch[] = [];
    for (const i of resolvePages(opts.pages, m.FPDF_GetPageCount(d.doc))) {
      for (const hit of findOnPage(m, d.doc, i, re)) {
        if (matches.length >= limit) return { matches, truncated: true };
        matches.push({ page: i + 1, text: hit.text, boxes: hit.boxes });
      }
    }
    return { matches, truncated: false };
  } finally {
    d.close();
  }
}

/**
 * A plain query matches across line breaks and runs of spaces (PDFium puts \r\n between lines);
 * a regex is used as written, with the g flag added.
 */
export function compileQuery(opts: { query: string; regex?: boolean; caseSensitive?: boolean }): RegExp {
  if (typeof opts.query !== 'string' || !opts.query.trim()) throw invalidArgument('query: a non-empty string.');
  const flags = `gu${opts.caseSensitive ? '' : 'i'}`;
  try {
    if (opts.regex) return new RegExp(opts.query, flags);
  } catch (e) {
    throw invalidArgument(`query: not a valid regular expression: ${(e as Error).message}`);
  }
  const escaped = opts.query.trim().split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\s+');
  return new RegExp(escaped, flags);
}

export interface PageHit {
  text: string;
  start: number;
  end: number;
  boxes: Box[];
  userRects: { left: number; bottom: number; right: number; top: number }[];
}

export function findOnPage(m: Pdfium, doc: number, index: number, re: RegExp): PageHit[] {
  const p = loadTextPage(m, doc, index);
  try {
    const s = pageString(m, p.text);
    const hits: PageHit[] = [];
    re.lastIndex = 0;
    for (const match of s.matchAll(re)) {
      if (!match[0].length) continue; // an empty regex match has nothing to box
      const start = match.index!;
      const userRects = rangeRects(m, p.text, start, match[0].length);
      hits.push({
        text: match[0].replace(/\r?\n/g, ' '),
        start,
        end: start + match[0].length,
        userRects,
        boxes: userRects.map((r) => p.frame.boxFromUser(r.left, r.bottom, r.right, r.top)),
      });
    }
    return hits;
  } finally {
    p.close();
  }
}
