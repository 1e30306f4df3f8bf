/**
 * Search documents → chunks, by structure: the document pipeline's elements (PDF text layer with OCR of
 * scans, DOCX, HTML, Markdown, text, images through OCR) are cut at headings, sections longer than the
 * chunk size are cut by tokens with overlap, and no chunk spans two pages, so a hit names its page.
 * Each page's chunks start under the headings still open from earlier pages (repeated as context).
 * A pure function over bytes and plain options, so it can run in a worker.
 */
import { analyseBytes } from '../documents/lazy.ts';
import type { DocFormat } from '../documents/detect.ts';
import type { DocElement } from '../documents/elements.ts';
import { splitElements } from '../documents/split.ts';
import type { ChunkIn } from '../../store/retrieval.ts';

export interface SearchChunking {
  maxTokens: number;
  overlap: number;
}
export const DEFAULT_SEARCH_CHUNKING: SearchChunking = { maxTokens: 400, overlap: 60 };

const isHeading = (e: DocElement) => e.type === 'title' || e.type === 'section_header';
const levelOf = (e: DocElement) => (e.type === 'title' ? 1 : (e.level ?? 2));

/** Elements grouped by page (one group for formats without pages), each group led by the open headings. */
export function pageGroups(elements: DocElement[]): DocElement[][] {
  const groups: DocElement[][] = [];
  const open: DocElement[] = [];
  let cur: DocElement[] = [];
  let page: number | null | undefined;
  for (const e of elements) {
    if (e.page !== page && cur.length) {
      groups.push(cur);
      cur = [];
    }
    if (!cur.length && e.page !== null && !(isHeading(e) && open.length === 0)) {
      // carry the headings open at the page break into this page's first chunk
      cur.push(...open.filter((h) => !isHeading(e) || levelOf(h) < levelOf(e)).map((h) => ({ ...h, page: e.page })));
    }
    page = e.page;
    if (isHeading(e)) {
      while (open.length && levelOf(open[open.length - 1]!) >= levelOf(e)) open.pop();
      open.push(e);
    }
    cur.push(e);
  }
  if (cur.length) groups.push(cur);
  return groups;
}

export function chunkElements(
  elements: DocElement[],
  meta: Record<string, unknown>,
  o: SearchChunking = DEFAULT_SEARCH_CHUNKING,
): ChunkIn[] {
  const out: ChunkIn[] = [];
  for (const group of pageGroups(elements)) {
    for (const c of splitElements(group, { strategy: 'headings', maxTokens: o.maxTokens, overlap: o.overlap })) {
      if (c.text.trim()) out.push({ position: out.length, text: c.text, meta: { ...meta, pages: c.pages, heading_path: c.heading_path } });
    }
  }
  return out;
}

export async function chunkForSearch(
  bytes: Uint8Array,
  format: DocFormat,
  meta: Record<string, unknown>,
  o: SearchChunking = DEFAULT_SEARCH_CHUNKING,
  signal?: AbortSignal,
): Promise<ChunkIn[]> {
  const doc = await analyseBytes(bytes, format, { ocrScans: true, signal });
  return chunkElements(doc.elements, meta, o);
}
