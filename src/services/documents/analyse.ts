/**
 * Any supported document → typed elements (and Markdown). PDFs: the text layer (pdfLayout) through layout
 * analysis; pages without text are rendered and OCR'd. Images: OCR then layout analysis. Other formats:
 * their converter's Markdown, read back into elements.
 */
import { bytesToBase64 } from '../base64.ts';
import { invalidArgument } from '../errors.ts';
import { type LayoutPage, pdfLayout } from '../pdf/pdf-layout.ts';
import { type PageSelection, resolvePages } from '../pdf/page-ranges.ts';
import { loadPdfium, openDoc } from '../pdf/pdfium.ts';
import { renderPage } from '../pdf/pdf-to-images.ts';
import { type EngineChoice, forEachPdfPage, ocrGray, pickEngine } from '../ocr/ocr.ts';
import { cropGray, decodeGrayFrames, encodeGray, type Gray, grayFromRgba } from '../ocr/raster.ts';
import type { OcrPage } from '../ocr/types.ts';
import { type DocFormat, isImage } from './detect.ts';
import { type AnalysedDocument, type DocElement, elementsToMarkdown } from './elements.ts';
import { analyseLayout, type InPage } from './layout-analysis.ts';
import { markdownToElements } from './md-elements.ts';
import {
  csvToMarkdown,
  decodeText,
  docxToMarkdown,
  emlToMarkdown,
  htmlToMarkdown,
  odtToMarkdown,
  pptxToMarkdown,
  xlsxToMarkdown,
} from './office.ts';

export type Effort = 'Low' | 'Medium' | 'High';

export interface AnalyseOptions {
  pages?: PageSelection;
  password?: string;
  /** Low: text layer only; Medium (default): + layout analysis and tables; High: + OCR of pages without text and of figures */
  effort?: Effort;
  /** OCR pages without a text layer even at Low/Medium (document-to-markdown always does) */
  ocrScans?: boolean;
  engine?: EngineChoice;
  language?: string;
  /** resolution for OCR of PDF pages */
  dpi?: number;
  includeFigureImages?: boolean;
  signal?: AbortSignal;
  progress?: (done: number, total: number) => void;
}

export interface Analysed extends AnalysedDocument {
  markdown: string;
  /** pages OCR'd (1-based) */
  ocrPages: number[];
}

const SCAN_CHARS = 16; // a page with fewer text-layer characters is treated as a scan

export async function analyseBytes(bytes: Uint8Array, format: DocFormat, opts: AnalyseOptions = {}): Promise<Analysed> {
  if (format === 'pdf') return analysePdf(bytes, opts);
  if (isImage(format)) return analyseImage(bytes, opts);
  if (opts.pages !== undefined && opts.pages !== 'all') {
    throw invalidArgument(`pages: a ${format.toUpperCase()} document has no pages; leave pages out.`);
  }
  const markdown = await toMarkdown(bytes, format);
  opts.progress?.(1, 1);
  return { format, pages: [], elements: markdownToElements(markdown), markdown, ocrPages: [] };
}

export async function toMarkdown(bytes: Uint8Array, format: DocFormat): Promise<string> {
  switch (format) {
    case 'docx':
      return docxToMarkdown(bytes);
    case 'xlsx':
      return xlsxToMarkdown(bytes);
    case 'pptx':
      return pptxToMarkdown(bytes);
    case 'odt':
      return odtToMarkdown(bytes);
    case 'html':
      return htmlToMarkdown(decodeText(bytes));
    case 'eml':
      return emlToMarkdown(bytes);
    case 'csv':
      return csvToMarkdown(bytes);
    case 'markdown':
      return `${decodeText(bytes).trim()}\n`;
    case 'text':
      return `${decodeText(bytes).replace(/\r\n/g, '\n').trim()}\n`;
    default:
      throw invalidArgument(`${format} has no Markdown converter`);
  }
}

// ---------------------------------------------------------------- PDF

function pdfPageToIn(p: LayoutPage): InPage {
  return {
    page: p.page,
    width: p.width,
    height: p.height,
    source: 'text',
    images: p.images,
    lines: p.lines.map((l) => ({
      text: l.text,
      box: l.box,
      words: l.words.map((w) => ({ text: w.text, box: w.box, font: w.font, fontSize: w.fontSize })),
    })),
  };
}

/** OCR result → positioned input for layout analysis; `scale` converts pixels to the page unit. */
export function ocrToIn(o: OcrPage, scale: number): InPage {
  const s = (b: { x: number; y: number; width: number; height: number }) => ({
    x: b.x * scale,
    y: b.y * scale,
    width: b.width * scale,
    height: b.height * scale,
  });
  return {
    page: o.page,
    width: o.width * scale,
    height: o.height * scale,
    source: 'ocr',
    images: [],
    rotation: o.rotation,
    deskew: o.deskew,
    lines: o.lines.map((l) => {
      const size = (l.font_size ?? l.box.height / 1.2) * scale;
      return {
        text: l.text,
        box: s(l.box),
        words: l.words.map((w) => ({ text: w.text, box: s(w.box), fontSize: size, bold: l.bold ?? false })),
      };
    }),
  };
}

async function analysePdf(bytes: Uint8Array, opts: AnalyseOptions): Promise<Analysed> {
  const effort = opts.effort ?? 'Medium';
  const layout = await pdfLayout(bytes, { pages: opts.pages, password: opts.password });
  const total = layout.pages.length;
  const ocrWanted = opts.ocrScans || effort === 'High';
  const isScan = (p: LayoutPage) => p.lines.reduce((s, l) => s + l.text.length, 0) < SCAN_CHARS;
  const scans = ocrWanted ? layout.pages.filter(isScan).map((p) => p.page - 1) : [];
  let done = 0;
  const ocrIn = new Map<number, InPage>();
  if (scans.length) {
    const engine = pickEngine(opts.engine, opts.language);
    const want = new Set(scans);
    const byIndex = new Map(layout.pages.map((p) => [p.page - 1, p]));
    await forEachPdfPage(bytes, {
      pages: scans.map((i) => i + 1),
      dpi: (i) => opts.dpi ?? scanDpi(byIndex.get(i)!),
      password: opts.password,
      only: (i) => want.has(i),
    }, async (g, page, _n, dpi) => {
      opts.signal?.throwIfAborted();
      const o = await ocrGray(g, page, engine, { signal: opts.signal });
      ocrIn.set(page, ocrToIn(o, 72 / dpi));
      opts.progress?.(++done, total);
    });
  }
  const inPages = layout.pages.map((p) => ocrIn.get(p.page) ?? pdfPageToIn(p));
  let { elements, pages } = effort === 'Low' ? textOnly(inPages) : analyseLayout(inPages);
  opts.progress?.(total, total);
  if (effort === 'High' || opts.includeFigureImages) await figures(bytes, elements, opts, effort === 'High');
  elements = elements.filter((e) => e.type !== 'figure' || (e.bbox && e.bbox.width > 8));
  return { format: 'pdf', pages, elements, markdown: elementsToMarkdown(elements), ocrPages: [...ocrIn.keys()] };
}

/** A scan is rendered at the resolution of its largest image (150–400 dpi), else 300 dpi. */
export function scanDpi(p: LayoutPage): number {
  const big = [...p.images].sort((a, b) => b.box.width * b.box.height - a.box.width * a.box.height)[0];
  if (!big || big.box.width < p.width * 0.5) return 300;
  return Math.round(Math.max(150, Math.min(400, big.pixelWidth / (big.box.width / 72))));
}

/** Effort Low: the text layer as it comes, one paragraph per run of close lines; no tables, headings or order changes. */
function textOnly(pages: InPage[]): { elements: DocElement[]; pages: AnalysedDocument['pages'] } {
  const elements: DocElement[] = [];
  for (const p of pages) {
    let cur: { text: string; boxes: InPage['lines'][number]['box'][] } | null = null;
    let last: InPage['lines'][number] | null = null;
    const flush = () => {
      if (cur) {
        const x0 = Math.min(...cur.boxes.map((b) => b.x)), y0 = Math.min(...cur.boxes.map((b) => b.y));
        const x1 = Math.max(...cur.boxes.map((b) => b.x + b.width)), y1 = Math.max(...cur.boxes.map((b) => b.y + b.height));
        elements.push({
          type: 'paragraph',
          text: cur.text,
          page: p.page,
          bbox: { x: x0, y: y0, width: x1 - x0, height: y1 - y0 },
          source: p.source,
        });
      }
      cur = null;
    };
    for (const l of p.lines) {
      const gap = last ? l.box.y - (last.box.y + last.box.height) : 0;
      if (!cur || gap > last!.box.height * 0.8 || gap < -last!.box.height * 2) {
        flush();
        cur = { text: l.text, boxes: [l.box] };
      } else {
        cur.text += ` ${l.text}`;
        cur.boxes.push(l.box);
      }
      last = l;
    }
    flush();
  }
  return { elements, pages: pages.map((p) => ({ page: p.page, width: p.width, height: p.height, source: p.source })) };
}

/** Figure crops (include_figure_images) and, at High effort, the text inside figures (OCR). */
async function figures(bytes: Uint8Array, elements: DocElement[], opts: AnalyseOptions, ocr: boolean): Promise<void> {
  const figs = elements.filter((e) => e.type === 'figure' && e.bbox && e.page !== null);
  if (!figs.length) return;
  const dpi = 150, k = dpi / 72;
  const engine = ocr ? pickEngine(opts.engine, opts.language) : null;
  const m = await loadPdfium();
  const d = openDoc(m, bytes, opts.password);
  const renders = new Map<number, Gray>();
  try {
    for (const f of figs) {
      if (!renders.has(f.page!)) renders.set(f.page!, await grayFromRgba(renderPage(m, d.doc, f.page! - 1, dpi, false)));
    }
  } finally {
    d.close();
  }
  for (const f of figs) {
    const g = renders.get(f.page!)!;
    const crop = cropGray(g, f.bbox!.x * k, f.bbox!.y * k, f.bbox!.width * k, f.bbox!.height * k);
    if (opts.includeFigureImages) f.image = { mime_type: 'image/png', data: bytesToBase64(await encodeGray(crop, 'png')) };
    if (engine && crop.width >= 32 && crop.height >= 16) {
      const o = await ocrGray(crop, f.page!, engine, { detectOrientation: false, deskew: false, signal: opts.signal });
      if (o.text.trim()) f.text = o.text.trim();
    }
  }
}

// ---------------------------------------------------------------- images

async function analyseImage(bytes: Uint8Array, opts: AnalyseOptions): Promise<Analysed> {
  const engine = pickEngine(opts.engine, opts.language);
  const frames = await decodeGrayFrames(bytes);
  const wanted = resolvePages(opts.pages, frames.length);
  const inPages: InPage[] = [];
  for (const i of wanted) {
    opts.signal?.throwIfAborted();
    const o = await ocrGray(frames[i]!, i + 1, engine, { signal: opts.signal });
    inPages.push(ocrToIn(o, 1));
    opts.progress?.(inPages.length, wanted.length);
  }
  const { elements, pages } = (opts.effort ?? 'Medium') === 'Low' ? textOnly(inPages) : analyseLayout(inPages);
  return { format: 'image', pages, elements, markdown: elementsToMarkdown(elements), ocrPages: inPages.map((p) => p.page) };
}
