/**
 * pdfOcr: a searchable PDF from scans. Each page without text is rendered (PDFium), read by our OCR,
 * and gets an invisible text layer (text render mode 3) with every word placed and horizontally
 * scaled onto its box in the image; the page's own content, images included, is left as it was.
 * Pages that already carry text are skipped unless forced.
 */
import fontkit from '@cantoo/fontkit';
import { readFile } from 'node:fs/promises';
import { PDFArray, type PDFFont, PDFName, PDFRef } from '@cantoo/pdf-lib';
import { packageFile } from '../../runtime/assets.ts';
import type { EngineChoice } from '../ocr/ocr.ts';
import { ocrDocument } from '../ocr/lazy.ts';
import { openPdf } from './open.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';
import { loadPdfium, openDoc } from './pdfium.ts';
import { refuseSigned } from './signed-guard.ts';
import { loadTextPage, pageString } from './text-page.ts';

export interface PdfOcrOptions {
  pages?: PageSelection;
  /** OCR pages that already have text too */
  force?: boolean;
  engine?: EngineChoice;
  language?: string;
  dpi?: number;
  password?: string;
  signal?: AbortSignal;
  progress?: (done: number, total: number) => void;
}

export interface PdfOcrResult {
  pdf: Uint8Array;
  pages: { page: number; status: 'ocr' | 'skipped_has_text'; words: number; confidence?: number }[];
}

export async function pdfOcr(bytes: Uint8Array, o: PdfOcrOptions = {}): Promise<PdfOcrResult> {
  const dpi = o.dpi ?? 300;
  const { doc, plain } = await openPdf(bytes, { password: o.password });
  refuseSigned(doc, 'adding a text layer rewrites pages');
  const selected = resolvePages(o.pages, doc.getPageCount());
  const hasText = await pagesWithText(plain, selected);
  const todo = selected.filter((i) => o.force || !hasText.has(i));
  const report: PdfOcrResult['pages'] = selected.filter((i) => !todo.includes(i)).map((i) => ({
    page: i + 1,
    status: 'skipped_has_text' as const,
    words: 0,
  }));
  if (todo.length) {
    const ocr = await ocrDocument(plain, 'pdf', {
      pages: todo.map((i) => i + 1),
      dpi,
      engine: o.engine,
      language: o.language,
      detectOrientation: false,
      deskew: false,
      signal: o.signal,
      progress: o.progress,
    });
    doc.registerFontkit(fontkit);
    const font = await doc.embedFont(new Uint8Array(await readFile(packageFile('dejavu-fonts-ttf/ttf/DejaVuSans.ttf'))), { subset: true });
    for (const p of ocr) {
      const page = doc.getPage(p.page - 1);
      const words = p.lines.flatMap((l) => l.words).filter((w) => w.text.trim());
      const ops = textLayer(font, words, page.getCropBox(), p.width, p.height, page.getRotation().angle);
      addLayer(doc, page.node, font, ops);
      report.push({ page: p.page, status: 'ocr', words: words.length, confidence: p.confidence });
    }
  }
  report.sort((a, b) => a.page - b.page);
  return { pdf: await doc.save({ useObjectStreams: true }), pages: report };
}

/** Page indices (0-based) among `pages` whose text layer already has characters. */
async function pagesWithText(bytes: Uint8Array, pages: number[]): Promise<Set<number>> {
  const m = await loadPdfium();
  const d = openDoc(m, bytes);
  const out = new Set<number>();
  try {
    for (const i of pages) {
      const p = loadTextPage(m, d.doc, i);
      try {
        if (pageString(m, p.text).trim().length > 0) out.add(i);
      } finally {
        p.close();
      }
    }
  } finally {
    d.close();
  }
  return out;
}

const f = (n: number) => (Math.round(n * 100) / 100).toString();

/**
 * Operators placing each word invisibly over its box. Image pixels (origin top-left, the page as
 * displayed) map to user space through the crop box and the page rotation.
 */
function textLayer(
  font: PDFFont,
  words: { text: string; box: { x: number; y: number; width: number; height: number } }[],
  crop: { x: number; y: number; width: number; height: number },
  iw: number,
  ih: number,
  rotation: number,
): string {
  const rot = ((rotation % 360) + 360) % 360;
  const dispW = rot % 180 ? crop.height : crop.width;
  const dispH = rot % 180 ? crop.width : crop.height;
  const sx = dispW / iw;
  const sy = dispH / ih;
  // display (x right, y up from the bottom-left of the displayed page) → user space
  const toUser = (x: number, y: number): [number, number] => {
    switch (rot) {
      case 90:
        return [crop.x + y, crop.y + crop.height - x];
      case 180:
        return [crop.x + crop.width - x, crop.y + crop.height - y];
      case 270:
        return [crop.x + crop.width - y, crop.y + x];
      default:
        return [crop.x + x, crop.y + y];
    }
  };
  const [a, b, c, d] = rot === 90 ? [0, -1, 1, 0] : rot === 180 ? [-1, 0, 0, -1] : rot === 270 ? [0, 1, -1, 0] : [1, 0, 0, 1];
  let ops = 'BT 3 Tr\n';
  for (const w of words) {
    const hPt = w.box.height * sy;
    const wPt = w.box.width * sx;
    // DejaVu's ascent + descent is about 1.17 em: the word box height is roughly that
    const size = Math.max(1, hPt / 1.17);
    const natural = font.widthOfTextAtSize(w.text, size);
    const tz = natural > 0 ? (100 * wPt) / natural : 100;
    const baseX = w.box.x * sx;
    const baseY = dispH - (w.box.y + w.box.height) * sy + size * 0.24; // the baseline sits above the descender
    const [ux, uy] = toUser(baseX, baseY);
    ops += `/FOcr ${f(size)} Tf ${f(tz)} Tz ${a} ${b} ${c} ${d} ${f(ux)} ${f(uy)} Tm ${font.encodeText(w.text).toString()} Tj\n`;
  }
  return `${ops}ET\n`;
}

/** Wraps the existing content in q/Q and appends the text layer after it, with its font resource. */
function addLayer(doc: import('@cantoo/pdf-lib').PDFDocument, page: import('@cantoo/pdf-lib').PDFPageLeaf, font: PDFFont, ops: string) {
  const ctx = doc.context;
  const existing = page.get(PDFName.of('Contents'));
  const list: PDFRef[] = [];
  const resolved = existing instanceof PDFRef ? ctx.lookup(existing) : existing;
  const arr = resolved instanceof PDFArray ? resolved : undefined;
  if (arr) { for (const r of arr.asArray()) list.push(r as PDFRef); }
  else if (existing instanceof PDFRef) list.push(existing);
  const pre = ctx.register(ctx.flateStream('q\n'));
  const post = ctx.register(ctx.flateStream(`Q\n${ops}`));
  page.set(PDFName.of('Contents'), ctx.obj([pre, ...list, post]));
  page.setFontDictionary(PDFName.of('FOcr'), font.ref);
}
