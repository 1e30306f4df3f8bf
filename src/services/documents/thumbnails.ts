/**
 * Thumbnails of the first page (or selected pages) of any supported document, fitted inside a square of
 * `size` pixels (aspect kept), PNG or WebP. PDFs are rendered by PDFium at the resolution that gives the
 * size; images are resized; formats without pages are first laid out as a simple PDF page of their
 * Markdown text (headings larger, tables as rows) so that every format has a first page to show.
 */
import { PDFDocument, type PDFFont, rgb, StandardFonts } from '@cantoo/pdf-lib';
import { invalidArgument, ServiceError } from '../errors.ts';
import { type PageSelection, resolvePages } from '../pdf/page-ranges.ts';
import { loadPdfium, openDoc } from '../pdf/pdfium.ts';
import { renderPage } from '../pdf/pdf-to-images.ts';
import { decodeBmp, sharpLib } from '../ocr/raster.ts';
import { type DocFormat, isImage } from './detect.ts';
import { toMarkdown } from './analyse.ts';

export interface Thumbnail {
  page: number;
  width: number;
  height: number;
  mime_type: string;
  bytes: Uint8Array;
}
export interface ThumbnailOptions {
  pages?: PageSelection;
  size?: number;
  format?: 'png' | 'webp';
  password?: string;
}

export async function documentThumbnails(bytes: Uint8Array, format: DocFormat, opts: ThumbnailOptions = {}): Promise<Thumbnail[]> {
  const size = opts.size ?? 256;
  if (!(Number.isInteger(size) && size >= 16 && size <= 2048)) {
    throw invalidArgument('size: an integer from 16 to 2048 (pixels, longer side).');
  }
  const fmt = opts.format ?? 'png';
  if (fmt !== 'png' && fmt !== 'webp') throw invalidArgument('format: png or webp.');
  const sharp = await sharpLib();
  if (!sharp) {
    throw new ServiceError(503, 'service_unavailable', 'thumbnails need the sharp image library, which does not load in this runtime', {
      headers: { 'Retry-After': '5' },
    });
  }
  const encode = async (input: Parameters<typeof sharp>[0], raw?: { width: number; height: number; channels: 1 | 3 | 4 }, page = 0) => {
    const img = sharp(input as never, { ...(raw ? { raw } : {}), ...(page ? { page } : {}) }).flatten({ background: '#ffffff' }).resize(
      size,
      size,
      { fit: 'inside', withoutEnlargement: false },
    );
    const { data, info } = await (fmt === 'png' ? img.png() : img.webp()).toBuffer({ resolveWithObject: true });
    return { width: info.width, height: info.height, bytes: new Uint8Array(data) };
  };
  if (isImage(format)) {
    if (format === 'bmp') {
      const b = decodeBmp(bytes);
      return [{ page: 1, mime_type: `image/${fmt}`, ...(await encode(b.data, { width: b.width, height: b.height, channels: 4 })) }];
    }
    const meta = await sharp(bytes).metadata();
    const pages = resolvePages(opts.pages ?? '1', format === 'tiff' ? (meta.pages ?? 1) : 1);
    const out: Thumbnail[] = [];
    for (const i of pages) out.push({ page: i + 1, mime_type: `image/${fmt}`, ...(await encode(bytes, undefined, i)) });
    return out;
  }
  const pdf = format === 'pdf' ? bytes : await previewPdf(await toMarkdown(bytes, format));
  const m = await loadPdfium();
  const d = openDoc(m, pdf, opts.password);
  const out: Thumbnail[] = [];
  try {
    const pages = resolvePages(opts.pages ?? '1', m.FPDF_GetPageCount(d.doc));
    for (const i of pages) {
      const page = m.FPDF_LoadPage(d.doc, i);
      const longest = Math.max(m.FPDF_GetPageWidthF(page), m.FPDF_GetPageHeightF(page));
      m.FPDF_ClosePage(page);
      const dpi = Math.min(1200, Math.max(10, (size * 72) / longest * 1.02));
      const rgba = renderPage(m, d.doc, i, dpi);
      out.push({
        page: i + 1,
        mime_type: `image/${fmt}`,
        ...(await encode(rgba.data, { width: rgba.width, height: rgba.height, channels: 4 })),
      });
    }
  } finally {
    d.close();
  }
  return out;
}

/** Markdown laid out on Letter pages with the standard Helvetica fonts (characters outside WinAnsi become '?'). */
export async function previewPdf(md: string, maxPages = 3): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const W = 612, H = 792, M = 54;
  let page = doc.addPage([W, H]);
  let y = H - M;
  const clean = (s: string) => s.replace(/[^\x20-\x7e\u00a0-\u00ff\u2013\u2014\u2018\u2019\u201c\u201d\u2022\u2026\u20ac]/g, '?');
  const line = (text: string, font: PDFFont, size: number, indent = 0) => {
    const words = clean(text).split(/\s+/).filter(Boolean);
    let cur = '';
    const emit = (s: string) => {
      if (y < M + size) {
        if (doc.getPageCount() >= maxPages) return;
        page = doc.addPage([W, H]);
        y = H - M;
      }
      page.drawText(s, { x: M + indent, y: y - size, size, font, color: rgb(0.1, 0.1, 0.1) });
      y -= size * 1.3;
    };
    for (const w of words) {
      const next = cur ? `${cur} ${w}` : w;
      if (font.widthOfTextAtSize(next, size) > W - 2 * M - indent && cur) {
        emit(cur);
        cur = w;
      } else cur = next;
    }
    if (cur) emit(cur);
  };
  for (const block of md.split(/\n{2,}/)) {
    if (doc.getPageCount() >= maxPages && y < M + 12) break;
    const h = /^(#{1,6})\s+(.*)$/s.exec(block.trim());
    if (h) {
      y -= 6;
      line(h[2]!.replace(/\n/g, ' '), bold, Math.max(11, 22 - h[1]!.length * 3));
      y -= 2;
      continue;
    }
    for (const l of block.split('\n')) {
      if (/^\s*\|?\s*:?-{3,}/.test(l)) continue;
      const isRow = /^\s*\|/.test(l);
      line(
        isRow
          ? l.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim()).join('   ')
          : l.replace(/^\s*[-*]\s+/, '\u2022 ').replace(/[*_`]/g, ''),
        regular,
        10,
        isRow ? 8 : 0,
      );
    }
    y -= 6;
  }
  return doc.save();
}
