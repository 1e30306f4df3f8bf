/**
 * Search highlight: a query (plain text matching across line breaks, or a regex) → the matching passages
 * with page and boxes; optionally the PDF with every match marked by a Highlight annotation.
 *
 * PDF text layers are searched with the PDF toolkit's own page search (same boxes as pdf-search);
 * PDF pages without text, and images, are OCR'd and searched in the recognised lines (boxes from the
 * words the match covers, in the coordinates of the upright page); other formats are searched in their
 * Markdown text (no page, no boxes).
 */
import { PDFArray, PDFDocument, PDFName, PDFNumber, PDFString } from '@cantoo/pdf-lib';
import { compileQuery, findOnPage } from '../pdf/pdf-search.ts';
import { type PageSelection, resolvePages } from '../pdf/page-ranges.ts';
import { loadPdfium, openDoc } from '../pdf/pdfium.ts';
import { loadTextPage, pageString } from '../pdf/text-page.ts';
import { renderPage } from '../pdf/pdf-to-images.ts';
import { decodeGrayFrames, grayFromRgba } from '../ocr/raster.ts';
import { type EngineChoice, ocrGray, pickEngine } from '../ocr/ocr.ts';
import type { OcrPage } from '../ocr/types.ts';
import { type DocFormat, isImage } from './detect.ts';
import type { BBox } from './elements.ts';
import { toMarkdown } from './analyse.ts';
import { passageBounds } from '../search/highlight.ts';

export interface HighlightOptions {
  query: string;
  regex?: boolean;
  caseSensitive?: boolean;
  pages?: PageSelection;
  password?: string;
  /** characters of context on each side of a match in its passage (default 80) */
  context?: number;
  limit?: number;
  /** OCR pages without a text layer (default true) */
  ocr?: boolean;
  engine?: EngineChoice;
  signal?: AbortSignal;
  progress?: (done: number, total: number) => void;
}

export interface Passage {
  page: number | null;
  /** the matched text */
  text: string;
  /** the match with `context` characters around it, cut at word boundaries, whitespace collapsed */
  passage: string;
  boxes: BBox[];
  source: 'text' | 'ocr';
}

export interface HighlightResult {
  query: string;
  matches: Passage[];
  truncated: boolean;
  /** the highlighted PDF (PDF input with output_format Pdf) */
  pdf?: Uint8Array;
}

function passageOf(s: string, start: number, end: number, ctx: number): string {
  const [a, b] = passageBounds(s, start, end, ctx);
  return `${a > 0 ? '…' : ''}${s.slice(a, b).replace(/\s+/g, ' ').trim()}${b < s.length ? '…' : ''}`;
}

/** Matches in OCR lines: the page text is the lines joined by newlines; boxes from the covered words, one per line. */
function searchOcr(o: OcrPage, re: RegExp, ctx: number, scale: number): Passage[] {
  let s = '';
  const spans: { start: number; end: number; line: number; box: BBox }[] = [];
  o.lines.forEach((l, li) => {
    if (s) s += '\n';
    l.words.forEach((w, wi) => {
      if (wi) s += ' ';
      spans.push({ start: s.length, end: s.length + w.text.length, line: li, box: w.box });
      s += w.text;
    });
  });
  const out: Passage[] = [];
  re.lastIndex = 0;
  for (const m of s.matchAll(re)) {
    if (!m[0].length) continue;
    const start = m.index!, end = start + m[0].length;
    const byLine = new Map<number, BBox[]>();
    for (const sp of spans) {
      if (sp.end > start && sp.start < end) {
        if (!byLine.has(sp.line)) byLine.set(sp.line, []);
        byLine.get(sp.line)!.push(sp.box);
      }
    }
    const boxes = [...byLine.values()].map((bs) => {
      const x0 = Math.min(...bs.map((b) => b.x)), y0 = Math.min(...bs.map((b) => b.y));
      const x1 = Math.max(...bs.map((b) => b.x + b.width)), y1 = Math.max(...bs.map((b) => b.y + b.height));
      const r = (n: number) => Math.round(n * scale * 100) / 100;
      return { x: r(x0), y: r(y0), width: r(x1 - x0), height: r(y1 - y0) };
    });
    out.push({ page: o.page, text: m[0].replace(/\s+/g, ' '), passage: passageOf(s, start, end, ctx), boxes, source: 'ocr' });
  }
  return out;
}

export async function highlightDocument(
  bytes: Uint8Array,
  format: DocFormat,
  opts: HighlightOptions & { returnPdf?: boolean },
): Promise<HighlightResult> {
  const re = compileQuery(opts);
  const ctx = opts.context ?? 80;
  const limit = opts.limit ?? 1000;
  const matches: Passage[] = [];
  let truncated = false;
  const add = (ps: Passage[]) => {
    for (const p of ps) {
      if (matches.length >= limit) {
        truncated = true;
        return;
      }
      matches.push(p);
    }
  };
  if (format === 'pdf') {
    const m = await loadPdfium();
    const d = openDoc(m, bytes, opts.password);
    const rects: { page: number; rects: { left: number; bottom: number; right: number; top: number }[] }[] = [];
    try {
      const pages = resolvePages(opts.pages, m.FPDF_GetPageCount(d.doc));
      let done = 0;
      for (const i of pages) {
        opts.signal?.throwIfAborted();
        const tp = loadTextPage(m, d.doc, i);
        let s: string;
        try {
          s = pageString(m, tp.text);
        } finally {
          tp.close();
        }
        if (s.replace(/\s/g, '').length < 16 && opts.ocr !== false) {
          const dpi = 300;
          const g = await grayFromRgba(renderPage(m, d.doc, i, dpi, false));
          add(searchOcr(await ocrGray(g, i + 1, pickEngine(opts.engine), { signal: opts.signal }), re, ctx, 72 / dpi));
        } else {
          const hits = findOnPage(m, d.doc, i, re);
          add(
            hits.map((h) => ({
              page: i + 1,
              text: h.text,
              passage: passageOf(s, h.start, h.end, ctx),
              boxes: h.boxes,
              source: 'text' as const,
            })),
          );
          if (hits.length) rects.push({ page: i, rects: hits.flatMap((h) => h.userRects) });
        }
        opts.progress?.(++done, pages.length);
        if (truncated) break;
      }
    } finally {
      d.close();
    }
    const result: HighlightResult = { query: opts.query, matches, truncated };
    if (opts.returnPdf) result.pdf = await annotate(bytes, rects, opts.password);
    return result;
  }
  if (isImage(format)) {
    const frames = await decodeGrayFrames(bytes);
    const pages = resolvePages(opts.pages, frames.length);
    let done = 0;
    for (const i of pages) {
      add(searchOcr(await ocrGray(frames[i]!, i + 1, pickEngine(opts.engine), { signal: opts.signal }), re, ctx, 1));
      opts.progress?.(++done, pages.length);
    }
    return { query: opts.query, matches, truncated };
  }
  const md = await toMarkdown(bytes, format);
  re.lastIndex = 0;
  add(
    [...md.matchAll(re)].filter((x) => x[0].length).map((x) => ({
      page: null,
      text: x[0].replace(/\s+/g, ' '),
      passage: passageOf(md, x.index!, x.index! + x[0].length, ctx),
      boxes: [],
      source: 'text' as const,
    })),
  );
  return { query: opts.query, matches, truncated };
}

/** Highlight annotations (yellow, QuadPoints per rectangle) added to a copy of the PDF. */
async function annotate(
  bytes: Uint8Array,
  pages: { page: number; rects: { left: number; bottom: number; right: number; top: number }[] }[],
  password?: string,
): Promise<Uint8Array> {
  let src = bytes;
  const probe = await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false });
  if (probe.isEncrypted) {
    const { decrypt } = await import('../pdf/open.ts');
    src = await decrypt(bytes, password);
  }
  const doc = await PDFDocument.load(src, { updateMetadata: false });
  const ctx = doc.context;
  for (const { page, rects } of pages) {
    const p = doc.getPage(page);
    let annots = p.node.lookupMaybe(PDFName.of('Annots'), PDFArray);
    if (!annots) {
      annots = ctx.obj([]);
      p.node.set(PDFName.of('Annots'), annots);
    }
    for (const r of rects) {
      const quad = [r.left, r.top, r.right, r.top, r.left, r.bottom, r.right, r.bottom];
      const annot = ctx.obj({
        Type: 'Annot',
        Subtype: 'Highlight',
        Rect: [r.left, r.bottom, r.right, r.top],
        QuadPoints: quad,
        C: [1, 0.92, 0.23],
        CA: PDFNumber.of(0.5),
        F: 4,
        Contents: PDFString.of('svc highlight'),
        P: p.ref,
      });
      annots.push(ctx.register(annot));
    }
  }
  return doc.save();
}
