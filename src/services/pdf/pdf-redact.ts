/**
 * pdfRedact: REMOVE content under boxes, then paint them black.
 * - text: PDFium's EmbedPDF extension EPDFText_RedactInRect drops every glyph whose box meets the
 *   rectangle, also inside form XObjects, and rewrites the content stream;
 * - images: pixels under the rectangle are overwritten (image objects meeting a box are re-encoded
 *   from their decoded bitmap with those pixels black);
 * - annotations meeting a box are deleted.
 * `flatten` additionally replaces each redacted page by a picture of itself (no text layer left).
 */
import { withoutSignatures } from './signed-guard.ts';
import { invalidArgument } from '../errors.ts';
import { assertPdf } from './open.ts';
import type { Box } from './page-frame.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';
import {
  getF32,
  heap,
  loadPdfium,
  OBJ_IMAGE,
  openDoc,
  type Pdfium,
  SAVE_FULL,
  SAVE_REMOVE_SECURITY,
  saveDoc,
  setF32,
  withScratch,
} from './pdfium.ts';
import { compileQuery, findOnPage } from './pdf-search.ts';
import { pageFrame } from './text-page.ts';

export interface RedactOptions {
  /** literal strings to remove (case-insensitive unless caseSensitive) */
  texts?: string[];
  /** regular expressions (JavaScript syntax) to remove */
  regex?: string[];
  caseSensitive?: boolean;
  /** boxes to remove, points, origin top-left of the displayed page; page is 1-based */
  rects?: { page: number; x: number; y: number; width: number; height: number }[];
  /** which pages text searches look at (default all) */
  pages?: PageSelection;
  /** replace each redacted page by an image of itself (default false) */
  flatten?: boolean;
  /** resolution of flattened pages (default 150) */
  flattenDpi?: number;
  password?: string;
  /** remove the signatures of a signed input instead of refusing it */
  dropSignatures?: boolean;
}

export interface RedactResult {
  pdf: Uint8Array;
  /** areas redacted per page (1-based page numbers) */
  redactions: { page: number; boxes: Box[] }[];
  /** signatures removed (drop_signatures on a signed input) */
  signaturesDropped: number;
}

type URect = { left: number; bottom: number; right: number; top: number };

export async function pdfRedact(bytes: Uint8Array, opts: RedactOptions): Promise<RedactResult> {
  const queries = [
    ...(opts.texts ?? []).map((q) => compileQuery({ query: q, caseSensitive: opts.caseSensitive })),
    ...(opts.regex ?? []).map((q) => compileQuery({ query: q, regex: true, caseSensitive: opts.caseSensitive })),
  ];
  if (!queries.length && !opts.rects?.length) throw invalidArgument('redact needs texts, regex or rects.');
  assertPdf(bytes);
  const unsigned = await withoutSignatures(bytes, opts.password, opts.dropSignatures, 'redaction');
  const signaturesDropped = unsigned.dropped;
  bytes = unsigned.bytes;
  const m = await loadPdfium();
  const d = openDoc(m, bytes, opts.password);
  try {
    const count = m.FPDF_GetPageCount(d.doc);
    const perPage = new Map<number, URect[]>();
    const add = (i: number, r: URect) => perPage.set(i, [...(perPage.get(i) ?? []), r]);
    for (const [k, r] of (opts.rects ?? []).entries()) {
      const [i] = resolvePages([r.page], count, `rects[${k}].page`);
      const page = m.FPDF_LoadPage(d.doc, i!);
      const frame = pageFrame(m, page);
      m.FPDF_ClosePage(page);
      frame.assertInside(r, `rects[${k}]`);
      add(i!, frame.userFromBox(r));
    }
    if (queries.length) {
      for (const i of resolvePages(opts.pages, count)) {
        for (const re of queries) for (const hit of findOnPage(m, d.doc, i, re)) for (const r of hit.userRects) add(i, r);
      }
    }

    const redactions: RedactResult['redactions'] = [];
    for (const [i, rects] of [...perPage.entries()].sort((a, b) => a[0] - b[0])) {
      const page = m.FPDF_LoadPage(d.doc, i);
      try {
        const frame = pageFrame(m, page);
        redactPage(m, page, rects);
        redactions.push({ page: i + 1, boxes: rects.map((r) => frame.boxFromUser(r.left, r.bottom, r.right, r.top)) });
      } finally {
        m.FPDF_ClosePage(page);
      }
      if (opts.flatten) flattenPage(m, d.doc, i, opts.flattenDpi ?? 150);
    }
    // like every other operation, an encrypted input comes out decrypted (the caller proved the password)
    const encrypted = m.EPDF_IsEncrypted(d.doc);
    if (encrypted) m.EPDF_RemoveEncryption(d.doc);
    return { pdf: saveDoc(m, d.doc, encrypted ? SAVE_REMOVE_SECURITY : SAVE_FULL), redactions, signaturesDropped };
  } finally {
    d.close();
  }
}

const meets = (a: URect, b: URect) => a.left < b.right && a.right > b.left && a.bottom < b.top && a.top > b.bottom;

function redactPage(m: Pdfium, page: number, rects: URect[]): void {
  withScratch(m, 2, (s) => {
    const p = s(0); // FS_RECTF {left, top, right, bottom}
    for (const r of rects) {
      [r.left, r.top, r.right, r.bottom].forEach((v, k) => setF32(m, p + 4 * k, v));
      m.EPDFText_RedactInRect(page, p, true, false);
    }
  });
  overwriteImages(m, page, rects);
  removeAnnotations(m, page, rects);
  for (const r of rects) {
    const box = m.FPDFPageObj_CreateNewRect(r.left, r.bottom, r.right - r.left, r.top - r.bottom);
    m.FPDFPageObj_SetFillColor(box, 0, 0, 0, 255);
    m.FPDFPath_SetDrawMode(box, 1, /* alternate fill */ false);
    m.FPDFPage_InsertObject(page, box);
  }
  if (!m.FPDFPage_GenerateContent(page)) throw new Error('PDFium could not rewrite the page content');
}

function objBounds(m: Pdfium, obj: number): URect | null {
  return withScratch(m, 4, (s) => {
    if (!m.FPDFPageObj_GetBounds(obj, s(0), s(1), s(2), s(3))) return null;
    return { left: getF32(m, s(0)), bottom: getF32(m, s(1)), right: getF32(m, s(2)), top: getF32(m, s(3)) };
  });
}

/** Black out the pixels of every image under a rect (the image is re-encoded from its bitmap). */
function overwriteImages(m: Pdfium, page: number, rects: URect[]): void {
  for (let o = m.FPDFPage_CountObjects(page) - 1; o >= 0; o--) {
    const obj = m.FPDFPage_GetObject(page, o);
    if (m.FPDFPageObj_GetType(obj) !== OBJ_IMAGE) continue;
    const b = objBounds(m, obj);
    if (!b) continue;
    const hit = rects.filter((r) => meets(b, r));
    if (!hit.length) continue;
    const matrix = withScratch(m, 3, (s) => {
      m.FPDFPageObj_GetMatrix(obj, s(0)); // FS_MATRIX {a,b,c,d,e,f} floats
      return [0, 1, 2, 3, 4, 5].map((k) => getF32(m, s(0) + 4 * k)) as [number, number, number, number, number, number];
    });
    const bmp = m.FPDFImageObj_GetBitmap(obj);
    if (!bmp) {
      // undecodable image: remove it whole rather than leave its pixels
      m.FPDFPage_RemoveObject(page, obj);
      m.FPDFPageObj_Destroy(obj);
      continue;
    }
    try {
      const w = m.FPDFBitmap_GetWidth(bmp);
      const h = m.FPDFBitmap_GetHeight(bmp);
      const stride = m.FPDFBitmap_GetStride(bmp);
      const bpp = Math.round(stride / w) >= 4 ? 4 : Math.round(stride / w);
      const buf = m.FPDFBitmap_GetBuffer(bmp);
      const [a, bb, c, dd, e, f] = matrix;
      const det = a * dd - bb * c;
      if (!det) continue;
      const h8 = heap(m).HEAPU8;
      // image space: unit square, (0,0) bottom-left of the image = bitmap row h-1
      for (const r of hit) {
        const corners = [
          [r.left, r.bottom],
          [r.right, r.bottom],
          [r.left, r.top],
          [r.right, r.top],
        ].map(([x, y]) => [(dd * (x! - e) - c * (y! - f)) / det, (-bb * (x! - e) + a * (y! - f)) / det]);
        const us = corners.map((p) => p[0]!);
        const vs = corners.map((p) => p[1]!);
        const x0 = Math.max(0, Math.floor(Math.min(...us) * w));
        const x1 = Math.min(w, Math.ceil(Math.max(...us) * w));
        const y0 = Math.max(0, Math.floor((1 - Math.max(...vs)) * h));
        const y1 = Math.min(h, Math.ceil((1 - Math.min(...vs)) * h));
        for (let y = y0; y < y1; y++) {
          const row = buf + y * stride;
          for (let x = x0; x < x1; x++) {
            const px = row + x * bpp;
            for (let k = 0; k < bpp; k++) h8[px + k] = k === 3 ? 255 : 0; // black, opaque
          }
        }
      }
      const pages = m.pdfium.wasmExports.malloc(4);
      heap(m).HEAP32[pages >> 2] = page;
      m.FPDFImageObj_SetBitmap(pages, 1, obj, bmp);
      m.pdfium.wasmExports.free(pages);
      m.FPDFImageObj_SetMatrix(obj, a, bb, c, dd, e, f);
    } finally {
      m.FPDFBitmap_Destroy(bmp);
    }
  }
}

function removeAnnotations(m: Pdfium, page: number, rects: URect[]): void {
  withScratch(m, 2, (s) => {
    for (let i = m.FPDFPage_GetAnnotCount(page) - 1; i >= 0; i--) {
      const a = m.FPDFPage_GetAnnot(page, i);
      if (!a) continue;
      const ok = m.FPDFAnnot_GetRect(a, s(0));
      m.FPDFPage_CloseAnnot(a);
      if (!ok) continue;
      const [l, t, r, b] = [0, 1, 2, 3].map((k) => getF32(m, s(0) + 4 * k)) as [number, number, number, number];
      const box = { left: Math.min(l, r), right: Math.max(l, r), bottom: Math.min(b, t), top: Math.max(b, t) };
      if (rects.some((x) => meets(box, x))) m.FPDFPage_RemoveAnnot(page, i);
    }
  });
}

/** Replace a page's content by a bitmap of it (unrotated; /Rotate still applies on display). */
function flattenPage(m: Pdfium, doc: number, index: number, dpi: number): void {
  const page = m.FPDF_LoadPage(doc, index);
  try {
    const rot = m.FPDFPage_GetRotation(page);
    m.FPDFPage_SetRotation(page, 0);
    const frame = pageFrame(m, page);
    const W = frame.right - frame.left;
    const H = frame.top - frame.bottom;
    const pw = Math.max(1, Math.round((W * dpi) / 72));
    const ph = Math.max(1, Math.round((H * dpi) / 72));
    const bmp = m.FPDFBitmap_CreateEx(pw, ph, 2, /* BGR: no alpha needed */ 0, 0);
    m.FPDFBitmap_FillRect(bmp, 0, 0, pw, ph, 0xffffffff);
    m.FPDF_RenderPageBitmap(bmp, page, 0, 0, pw, ph, 0, 0x01 /* FPDF_ANNOT */);
    for (let o = m.FPDFPage_CountObjects(page) - 1; o >= 0; o--) {
      const obj = m.FPDFPage_GetObject(page, o);
      m.FPDFPage_RemoveObject(page, obj);
      m.FPDFPageObj_Destroy(obj);
    }
    for (let a = m.FPDFPage_GetAnnotCount(page) - 1; a >= 0; a--) m.FPDFPage_RemoveAnnot(page, a);
    const img = m.FPDFPageObj_NewImageObj(doc);
    const pages = m.pdfium.wasmExports.malloc(4);
    heap(m).HEAP32[pages >> 2] = page;
    m.FPDFImageObj_SetBitmap(pages, 1, img, bmp);
    m.pdfium.wasmExports.free(pages);
    m.FPDFBitmap_Destroy(bmp);
    m.FPDFImageObj_SetMatrix(img, W, 0, 0, H, frame.left, frame.bottom);
    m.FPDFPage_InsertObject(page, img);
    m.FPDFPage_SetRotation(page, rot);
    if (!m.FPDFPage_GenerateContent(page)) throw new Error('PDFium could not rewrite the flattened page');
  } finally {
    m.FPDF_ClosePage(page);
  }
}
