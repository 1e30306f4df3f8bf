/**
 * Reading a page's text with PDFium: the page frame (for display coordinates), the text as one string
 * whose index i is PDFium's character i, and rectangles for a character range. Shared by layout,
 * search and redact so they agree on positions.
 */
import { getF32, getF64, heap, type Pdfium, withScratch } from './pdfium.ts';
import { PageFrame } from './page-frame.ts';

export interface PdfiumPage {
  page: number;
  text: number;
  frame: PageFrame;
  close(): void;
}

export function loadTextPage(m: Pdfium, doc: number, index: number): PdfiumPage {
  const page = m.FPDF_LoadPage(doc, index);
  const text = m.FPDFText_LoadPage(page);
  const frame = pageFrame(m, page);
  return {
    page,
    text,
    frame,
    close() {
      m.FPDFText_ClosePage(text);
      m.FPDF_ClosePage(page);
    },
  };
}

export function pageFrame(m: Pdfium, page: number): PageFrame {
  return withScratch(m, 2, (s) => {
    // FS_RECTF {left, top, right, bottom}: the visible box (CropBox clipped to MediaBox)
    const p = s(0);
    m.FPDF_GetPageBoundingBox(page, p);
    const [left, top, right, bottom] = [0, 1, 2, 3].map((k) => getF32(m, p + 4 * k)) as [number, number, number, number];
    return PageFrame.of({ left, bottom, right, top }, m.FPDFPage_GetRotation(page) * 90);
  });
}

/** All characters of the page as a string (PDFium inserts generated spaces and \r\n between lines). */
export function pageString(m: Pdfium, text: number): string {
  const n = m.FPDFText_CountChars(text);
  if (n <= 0) return '';
  const p = m.pdfium.wasmExports.malloc((n + 1) * 2);
  try {
    m.FPDFText_GetText(text, 0, n, p);
    const u16 = new Uint16Array(heap(m).HEAPU8.buffer, p, n);
    let s = '';
    for (let i = 0; i < n; i += 4096) s += String.fromCharCode(...u16.subarray(i, Math.min(n, i + 4096)));
    return s;
  } finally {
    m.pdfium.wasmExports.free(p);
  }
}

/** User-space rectangles PDFium merges for characters [start, start+count), one per line run. */
export function rangeRects(
  m: Pdfium,
  text: number,
  start: number,
  count: number,
): { left: number; bottom: number; right: number; top: number }[] {
  const n = m.FPDFText_CountRects(text, start, count);
  const out: { left: number; bottom: number; right: number; top: number }[] = [];
  withScratch(m, 4, (s) => {
    for (let k = 0; k < n; k++) {
      if (!m.FPDFText_GetRect(text, k, s(0), s(1), s(2), s(3))) continue;
      const [left, top, right, bottom] = [0, 1, 2, 3].map((i) => getF64(m, s(i)));
      out.push({ left: left!, bottom: bottom!, right: right!, top: top! });
    }
  });
  return out;
}

/** Tight user-space box of one character: left, right, bottom, top. */
export function charBox(m: Pdfium, text: number, i: number): { left: number; bottom: number; right: number; top: number } | null {
  return withScratch(m, 4, (s) => {
    if (!m.FPDFText_GetCharBox(text, i, s(0), s(1), s(2), s(3))) return null;
    return { left: getF64(m, s(0)), right: getF64(m, s(1)), bottom: getF64(m, s(2)), top: getF64(m, s(3)) };
  });
}
