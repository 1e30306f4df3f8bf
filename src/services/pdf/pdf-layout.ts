/**
 * pdfLayout: per page, text lines and words with boxes, font name and size, and images with boxes.
 * Boxes are points with the origin at the top-left of the displayed page (see page-frame.ts).
 * Read with PDFium's text page, whose character order and line breaks follow the content.
 */
import { assertPdf } from './open.ts';
import type { Box } from './page-frame.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';
import { getF32, heap, loadPdfium, OBJ_IMAGE, openDoc, type Pdfium, withScratch } from './pdfium.ts';
import { charBox, loadTextPage } from './text-page.ts';

export interface LayoutWord {
  text: string;
  box: Box;
  font: string;
  fontSize: number;
}
export interface LayoutLine {
  text: string;
  box: Box;
  words: LayoutWord[];
}
export interface LayoutImage {
  box: Box;
  /** pixel size of the image itself */
  pixelWidth: number;
  pixelHeight: number;
}
export interface LayoutPage {
  page: number;
  width: number;
  height: number;
  rotation: number;
  lines: LayoutLine[];
  images: LayoutImage[];
}

export async function pdfLayout(
  bytes: Uint8Array,
  opts: { pages?: PageSelection; password?: string } = {},
): Promise<{ origin: 'top-left'; unit: 'pt'; pages: LayoutPage[] }> {
  assertPdf(bytes);
  const m = await loadPdfium();
  const d = openDoc(m, bytes, opts.password);
  try {
    const pages = resolvePages(opts.pages, m.FPDF_GetPageCount(d.doc)).map((i) => pageLayout(m, d.doc, i));
    return { origin: 'top-left', unit: 'pt', pages };
  } finally {
    d.close();
  }
}

type U = { left: number; bottom: number; right: number; top: number };
const union = (
  a: U | null,
  b: U,
): U => (a
  ? { left: Math.min(a.left, b.left), bottom: Math.min(a.bottom, b.bottom), right: Math.max(a.right, b.right), top: Math.max(a.top, b.top) }
  : { ...b });

function pageLayout(m: Pdfium, doc: number, index: number): LayoutPage {
  const p = loadTextPage(m, doc, index);
  try {
    const toBox = (u: U) => p.frame.boxFromUser(u.left, u.bottom, u.right, u.top);
    const lines: LayoutLine[] = [];
    let words: LayoutWord[] = [];
    let word = '';
    let wbox: U | null = null;
    let wfont = { font: '', size: 0 };
    const endWord = () => {
      if (word && wbox) words.push({ text: word, box: toBox(wbox), font: wfont.font, fontSize: wfont.size });
      word = '';
      wbox = null;
    };
    const endLine = () => {
      endWord();
      if (!words.length) return;
      const lb = words.map((w) => p.frame.userFromBox(w.box)).reduce<U | null>(union, null)!;
      lines.push({ text: words.map((w) => w.text).join(' '), box: toBox(lb), words });
      words = [];
    };
    const n = m.FPDFText_CountChars(p.text);
    const fontName = fontReader(m, p.text);
    for (let i = 0; i < n; i++) {
      const u = m.FPDFText_GetUnicode(p.text, i);
      if (u === 10 || u === 13) {
        endLine();
        continue;
      }
      // PDFium reports a hyphen that ends a line as U+0002 and emits no line break after it
      if (u === 2) {
        if (word) word += '-';
        endLine();
        continue;
      }
      if (u === 32 || u === 9 || u === 0xa0 || u === 0) {
        endWord();
        continue;
      }
      const b = charBox(m, p.text, i);
      if (!b) continue;
      if (!word) wfont = { font: fontName(i), size: Math.round(m.FPDFText_GetFontSize(p.text, i) * 100) / 100 };
      word += String.fromCodePoint(u);
      wbox = union(wbox, b);
    }
    endLine();
    return {
      page: index + 1,
      width: r2(p.frame.width),
      height: r2(p.frame.height),
      rotation: p.frame.quarterTurns * 90,
      lines,
      images: images(m, p.page, toBox),
    };
  } finally {
    p.close();
  }
}

/** Font name of character i (PDFium writes it as UTF-8 into a caller buffer). */
function fontReader(m: Pdfium, text: number) {
  return (i: number): string =>
    withScratch(m, 32, (s) => {
      const len = m.FPDFText_GetFontInfo(text, i, s(0), 255, 0);
      if (len <= 0) return '';
      return new TextDecoder().decode(heap(m).HEAPU8.slice(s(0), s(0) + Math.min(len, 255))).replace(/\0.*$/s, '');
    });
}

function images(m: Pdfium, page: number, toBox: (u: U) => Box): LayoutImage[] {
  const out: LayoutImage[] = [];
  withScratch(m, 4, (s) => {
    for (let o = 0, n = m.FPDFPage_CountObjects(page); o < n; o++) {
      const obj = m.FPDFPage_GetObject(page, o);
      if (m.FPDFPageObj_GetType(obj) !== OBJ_IMAGE) continue;
      if (!m.FPDFPageObj_GetBounds(obj, s(0), s(1), s(2), s(3))) continue;
      const u = { left: getF32(m, s(0)), bottom: getF32(m, s(1)), right: getF32(m, s(2)), top: getF32(m, s(3)) };
      m.FPDFImageObj_GetImagePixelSize(obj, s(0), s(1));
      const px = heap(m).HEAP32;
      out.push({ box: toBox(u), pixelWidth: px[s(0) >> 2]!, pixelHeight: px[s(1) >> 2]! });
    }
  });
  return out;
}

const r2 = (n: number) => Math.round(n * 100) / 100;
