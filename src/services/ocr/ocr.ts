/**
 * OCR of images and PDF pages: each page is decoded (or rendered) to gray, turned upright and levelled
 * (orient.ts), then read by one engine. Progress is reported per page.
 */
import { invalidArgument } from '../errors.ts';
import { type PageSelection, resolvePages } from '../pdf/page-ranges.ts';
import { loadPdfium, openDoc } from '../pdf/pdfium.ts';
import { renderPage } from '../pdf/pdf-to-images.ts';
import { orientPage } from './orient.ts';
import { paddleEngine } from './paddle-engine.ts';
import { decodeGrayFrames, type Gray, grayFromRgba } from './raster.ts';
import { tesseractEngine } from './tesseract-engine.ts';
import type { OcrEngine, OcrEngineName, OcrPage } from './types.ts';

export type EngineChoice = OcrEngineName | 'auto';

export interface OcrOptions {
  engine?: EngineChoice;
  /** language hint: `eng`/`en` (default) or `chi_sim`/`zh`; auto picks tesseract for English, paddle for Chinese */
  language?: string;
  pages?: PageSelection;
  /** render resolution for PDF pages (default 300) */
  dpi?: number;
  detectOrientation?: boolean;
  deskew?: boolean;
  password?: string;
  signal?: AbortSignal;
  progress?: (done: number, total: number) => void;
}

const CHINESE = /^(zh|chi|chi_sim|chi_tra|zh-.*|chinese)$/i;

export function pickEngine(choice: EngineChoice = 'auto', language = 'eng'): OcrEngine {
  if (choice === 'tesseract') {
    if (CHINESE.test(language)) {
      throw invalidArgument(`language: the tesseract engine ships English data only; use engine "paddle" for ${language}.`);
    }
    return tesseractEngine;
  }
  if (choice === 'paddle') return paddleEngine;
  if (choice !== 'auto') throw invalidArgument('engine: tesseract, paddle or auto.');
  if (!/^(eng?|english|zh|chi.*|chinese|zh-.*)$/i.test(language)) {
    throw invalidArgument(`language: ${language} is not available (eng, chi_sim).`);
  }
  return CHINESE.test(language) ? paddleEngine : tesseractEngine;
}

/** OCR of one upright-or-not gray page. */
export async function ocrGray(
  g: Gray,
  page: number,
  engine: OcrEngine,
  opts: Pick<OcrOptions, 'detectOrientation' | 'deskew' | 'signal'> = {},
): Promise<OcrPage> {
  const o = await orientPage(g, opts);
  opts.signal?.throwIfAborted();
  const r = await engine.recognize(o.image, opts.signal);
  for (const l of r.lines) Object.assign(l, lineMetrics(o.image, l.box));
  const words = r.lines.flatMap((l) => l.words);
  const conf = words.length ? words.reduce((s, w) => s + w.confidence, 0) / words.length : 0;
  return {
    page,
    engine: engine.name,
    width: o.image.width,
    height: o.image.height,
    rotation: o.rotation,
    deskew: o.deskew,
    text: r.lines.map((l) => l.text).join('\n'),
    confidence: Math.round(conf * 1000) / 1000,
    lines: r.lines,
  };
}

/**
 * Font size and weight of a line from its pixels: the x-height is the band of rows holding at least half
 * of the busiest row's ink (font size ≈ x-height / 0.52); the stroke width is the median horizontal run
 * of ink in that band, and a stroke over 17% of the x-height reads as bold.
 */
export function lineMetrics(g: Gray, b: { x: number; y: number; width: number; height: number }): { font_size: number; bold: boolean } {
  const x0 = Math.max(0, Math.floor(b.x)), y0 = Math.max(0, Math.floor(b.y));
  const x1 = Math.min(g.width, Math.ceil(b.x + b.width)), y1 = Math.min(g.height, Math.ceil(b.y + b.height));
  const rows: number[] = [];
  for (let y = y0; y < y1; y++) {
    let c = 0;
    for (let x = x0, o = y * g.width; x < x1; x++) if (g.data[o + x]! < 128) c++;
    rows.push(c);
  }
  const max = Math.max(0, ...rows);
  if (!max) return { font_size: b.height / 1.2, bold: false };
  let top = -1, bot = -1;
  rows.forEach((c, i) => {
    if (c >= max * 0.5) {
      if (top < 0) top = i;
      bot = i;
    }
  });
  const xh = Math.max(2, bot - top + 1);
  const runs: number[] = [];
  for (let y = y0 + top; y <= y0 + bot; y++) {
    let run = 0;
    for (let x = x0, o = y * g.width; x <= x1; x++) {
      if (x < x1 && g.data[o + x]! < 128) run++;
      else if (run) {
        runs.push(run);
        run = 0;
      }
    }
  }
  runs.sort((a, c) => a - c);
  const stroke = runs.length ? runs[runs.length >> 1]! : 0;
  return { font_size: Math.round((xh / 0.52) * 10) / 10, bold: stroke / xh > 0.17 };
}

/** Rasterises selected PDF pages to gray at `dpi` (PDFium), one at a time through `each`. */
export async function forEachPdfPage(
  bytes: Uint8Array,
  opts: { pages?: PageSelection; dpi?: number | ((index: number) => number); password?: string; only?: (index: number) => boolean },
  each: (g: Gray, page: number, total: number, dpi: number) => Promise<void>,
): Promise<number> {
  const dpiOf = typeof opts.dpi === 'function' ? opts.dpi : () => (opts.dpi as number | undefined) ?? 300;
  if (typeof opts.dpi === 'number' && !(opts.dpi >= 50 && opts.dpi <= 600)) throw invalidArgument('dpi: 50 to 600.');
  const m = await loadPdfium();
  const d = openDoc(m, bytes, opts.password);
  try {
    const count = m.FPDF_GetPageCount(d.doc);
    const pages = resolvePages(opts.pages, count).filter((i) => opts.only?.(i) ?? true);
    let n = 0;
    for (const i of pages) {
      const dpi = dpiOf(i);
      const rgba = renderPage(m, d.doc, i, dpi, false);
      await each(await grayFromRgba(rgba), i + 1, pages.length, dpi);
      n++;
    }
    return n;
  } finally {
    d.close();
  }
}

/** OCR of an image file (every TIFF page) or of PDF pages. */
export async function ocrDocument(bytes: Uint8Array, kind: 'pdf' | 'image', opts: OcrOptions = {}): Promise<OcrPage[]> {
  const engine = pickEngine(opts.engine, opts.language);
  const out: OcrPage[] = [];
  if (kind === 'pdf') {
    await forEachPdfPage(bytes, opts, async (g, page, total) => {
      opts.signal?.throwIfAborted();
      out.push(await ocrGray(g, page, engine, opts));
      opts.progress?.(out.length, total);
    });
    return out;
  }
  const frames = await decodeGrayFrames(bytes);
  const wanted = resolvePages(opts.pages, frames.length);
  for (const i of wanted) {
    opts.signal?.throwIfAborted();
    out.push(await ocrGray(frames[i]!, i + 1, engine, opts));
    opts.progress?.(out.length, wanted.length);
  }
  return out;
}

/** Releases both engines now (tesseract workers, ONNX sessions); they load again on the next use. */
export async function releaseOcrEngines(): Promise<void> {
  const [{ releaseTesseract }, { releasePaddle }] = await Promise.all([import('./tesseract-engine.ts'), import('./paddle-engine.ts')]);
  await Promise.all([releaseTesseract(), releasePaddle()]);
}
