/** pdfToImages: pages rendered by PDFium at a DPI, encoded as PNG, JPEG or WebP. */
import { invalidArgument } from '../errors.ts';
import { encodeRgba, type Engine, type ImageFormat } from './encode-image.ts';
import { assertPdf } from './open.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';
import { heap, loadPdfium, openDoc, type Pdfium } from './pdfium.ts';
import type { Rgba } from './encode-image.ts';

export interface ToImagesOptions {
  pages?: PageSelection;
  format?: ImageFormat;
  /** 1 point = dpi/72 pixels; default 150 */
  dpi?: number;
  quality?: number;
  password?: string;
  engine?: Engine;
}

export interface PageImage {
  /** 1-based */
  page: number;
  width: number;
  height: number;
  mimeType: string;
  bytes: Uint8Array;
}

const MAX_PIXELS = 100_000_000; // a 100 MP page is ~400 MB of RGBA: refuse rather than exhaust memory

export async function pdfToImages(bytes: Uint8Array, opts: ToImagesOptions = {}): Promise<PageImage[]> {
  const format = opts.format ?? 'png';
  if (!['png', 'jpeg', 'webp'].includes(format)) throw invalidArgument('format: png, jpeg or webp.');
  const dpi = opts.dpi ?? 150;
  if (!(dpi >= 10 && dpi <= 1200)) throw invalidArgument('dpi: 10 to 1200.');
  assertPdf(bytes);
  const m = await loadPdfium();
  const d = openDoc(m, bytes, opts.password);
  // render everything first (PDFium is synchronous), then encode (async) with the document closed
  const rendered: { page: number; img: Rgba }[] = [];
  try {
    const pages = resolvePages(opts.pages, m.FPDF_GetPageCount(d.doc));
    for (const i of pages) rendered.push({ page: i + 1, img: renderPage(m, d.doc, i, dpi) });
  } finally {
    d.close();
  }
  const out: PageImage[] = [];
  for (const r of rendered) {
    out.push({
      page: r.page,
      width: r.img.width,
      height: r.img.height,
      mimeType: `image/${format}`,
      bytes: await encodeRgba(r.img, format, opts),
    });
  }
  return out;
}

const FPDF_ANNOT = 0x01;
const FPDF_REVERSE_BYTE_ORDER = 0x10; // PDFium writes RGBA instead of BGRA
const FPDFBitmap_BGRA = 4;

/** One page as RGBA on white, rotation applied, annotations drawn. */
export function renderPage(m: Pdfium, doc: number, index: number, dpi: number, withAnnots = true): Rgba {
  const page = m.FPDF_LoadPage(doc, index);
  if (!page) throw invalidArgument(`page ${index + 1} cannot be loaded.`);
  try {
    const scale = dpi / 72;
    const width = Math.max(1, Math.round(m.FPDF_GetPageWidthF(page) * scale));
    const height = Math.max(1, Math.round(m.FPDF_GetPageHeightF(page) * scale));
    if (width * height > MAX_PIXELS) {
      throw invalidArgument(`page ${index + 1} at ${dpi} dpi would be ${width}x${height} pixels; lower dpi.`);
    }
    const bmp = m.FPDFBitmap_CreateEx(width, height, FPDFBitmap_BGRA, 0, 0);
    try {
      m.FPDFBitmap_FillRect(bmp, 0, 0, width, height, 0xffffffff);
      m.FPDF_RenderPageBitmap(bmp, page, 0, 0, width, height, 0, (withAnnots ? FPDF_ANNOT : 0) | FPDF_REVERSE_BYTE_ORDER);
      const stride = m.FPDFBitmap_GetStride(bmp);
      const buf = m.FPDFBitmap_GetBuffer(bmp);
      const data = new Uint8ClampedArray(width * height * 4);
      const h8 = heap(m).HEAPU8;
      if (stride === width * 4) data.set(h8.subarray(buf, buf + data.length));
      else for (let y = 0; y < height; y++) data.set(h8.subarray(buf + y * stride, buf + y * stride + width * 4), y * width * 4);
      return { data, width, height };
    } finally {
      m.FPDFBitmap_Destroy(bmp);
    }
  } finally {
    m.FPDF_ClosePage(page);
  }
}
