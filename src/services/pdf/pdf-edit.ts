/**
 * pdfEdit: a list of page operations applied in order. Page numbers are 1-based and refer to the
 * document as it is when that operation runs (after the earlier ones).
 */
import { degrees, PDFArray, PDFDocument, PDFName, PDFNumber, type PDFPage } from '@cantoo/pdf-lib';
import { invalidArgument } from '../errors.ts';
import { openPdf } from './open.ts';
import { guardSigned } from './signed-guard.ts';
import { type Box, PageFrame } from './page-frame.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';

export type EditOperation =
  /** turn pages clockwise by a multiple of 90 degrees (added to their current rotation) */
  | { op: 'rotate'; pages?: PageSelection; degrees: number }
  | { op: 'delete'; pages: PageSelection }
  /** a permutation of every page number: [3,1,2] */
  | { op: 'reorder'; order: number[] }
  /** blank pages after page `after` (0 = at the start); size defaults to the neighbouring page's */
  | { op: 'insert_blank'; after: number; count?: number; width?: number; height?: number }
  /** crop to a box in points, origin top-left of the page as displayed */
  | { op: 'crop'; pages?: PageSelection; box: Box }
  | {
    op: 'set_metadata';
    title?: string;
    author?: string;
    subject?: string;
    keywords?: string[] | string;
    creator?: string;
    producer?: string;
  };

export async function pdfEdit(
  bytes: Uint8Array,
  operations: EditOperation[],
  opts: { password?: string; dropSignatures?: boolean } = {},
): Promise<Uint8Array> {
  if (!Array.isArray(operations) || !operations.length) throw invalidArgument('operations: give at least one operation.');
  const { doc } = await openPdf(bytes, opts);
  guardSigned(doc, opts.dropSignatures, 'editing it');
  operations.forEach((op, i) => apply(doc, op, `operations[${i}]`));
  return doc.save({ useObjectStreams: true });
}

function apply(doc: PDFDocument, op: EditOperation, at: string): void {
  const count = doc.getPageCount();
  switch (op?.op) {
    case 'rotate': {
      if (!Number.isInteger(op.degrees) || op.degrees % 90 !== 0) throw invalidArgument(`${at}.degrees: a multiple of 90.`);
      for (const i of new Set(resolvePages(op.pages, count, `${at}.pages`))) {
        const page = doc.getPage(i);
        page.setRotation(degrees((((page.getRotation().angle + op.degrees) % 360) + 360) % 360));
      }
      return;
    }
    case 'delete': {
      const del = [...new Set(resolvePages(op.pages, count, `${at}.pages`))].sort((a, b) => b - a);
      if (del.length >= count) throw invalidArgument(`${at}: deleting every page would leave an empty document.`);
      for (const i of del) doc.removePage(i);
      return;
    }
    case 'reorder': {
      const order = op.order;
      const idx = resolvePages(order, count, `${at}.order`);
      if (idx.length !== count || new Set(idx).size !== count) {
        throw invalidArgument(`${at}.order: list every page number exactly once (${count} pages).`);
      }
      setPageOrder(doc, idx.map((i) => doc.getPage(i)));
      return;
    }
    case 'insert_blank': {
      const n = op.count ?? 1;
      if (!Number.isInteger(op.after) || op.after < 0 || op.after > count) throw invalidArgument(`${at}.after: 0 to ${count}.`);
      if (!Number.isInteger(n) || n < 1 || n > 1000) throw invalidArgument(`${at}.count: 1 to 1000.`);
      const ref = doc.getPage(Math.max(0, Math.min(op.after - 1, count - 1))).getSize();
      const w = op.width ?? ref.width;
      const h = op.height ?? ref.height;
      if (!(w > 0 && h > 0 && w <= 14400 && h <= 14400)) throw invalidArgument(`${at}: width and height in points, 1 to 14400.`);
      for (let k = 0; k < n; k++) doc.insertPage(op.after + k, [w, h]);
      return;
    }
    case 'crop': {
      for (const i of new Set(resolvePages(op.pages, count, `${at}.pages`))) {
        const page = doc.getPage(i);
        const c = page.getCropBox();
        const frame = PageFrame.of({ left: c.x, bottom: c.y, right: c.x + c.width, top: c.y + c.height }, page.getRotation().angle);
        frame.assertInside(op.box, `${at}.box (page ${i + 1})`);
        const u = frame.userFromBox(op.box);
        page.setCropBox(u.left, u.bottom, u.right - u.left, u.top - u.bottom);
      }
      return;
    }
    case 'set_metadata': {
      if (op.title !== undefined) doc.setTitle(String(op.title));
      if (op.author !== undefined) doc.setAuthor(String(op.author));
      if (op.subject !== undefined) doc.setSubject(String(op.subject));
      if (op.keywords !== undefined) doc.setKeywords(Array.isArray(op.keywords) ? op.keywords.map(String) : [String(op.keywords)]);
      if (op.creator !== undefined) doc.setCreator(String(op.creator));
      if (op.producer !== undefined) doc.setProducer(String(op.producer));
      doc.setModificationDate(new Date());
      return;
    }
    default:
      throw invalidArgument(`${at}.op: one of rotate, delete, reorder, insert_blank, crop, set_metadata.`);
  }
}

/**
 * Reorder by rewriting the page tree flat: pdf-lib's remove/insert pair corrupts /Count on some trees.
 * Inheritable attributes are copied onto each page first, since its parent changes.
 */
function setPageOrder(doc: PDFDocument, pages: PDFPage[]): void {
  const root = doc.catalog.Pages();
  const rootRef = doc.catalog.get(PDFName.of('Pages'))!;
  for (const page of pages) {
    const leaf = page.node;
    const inherited = { MediaBox: leaf.MediaBox(), CropBox: leaf.CropBox(), Rotate: leaf.Rotate(), Resources: leaf.Resources() };
    for (const [k, v] of Object.entries(inherited)) if (v) leaf.set(PDFName.of(k), v);
    leaf.set(PDFName.of('Parent'), rootRef);
  }
  root.set(PDFName.of('Kids'), PDFArray.withContext(doc.context));
  const kids = root.lookup(PDFName.of('Kids'), PDFArray);
  for (const page of pages) kids.push(page.ref);
  root.set(PDFName.of('Count'), PDFNumber.of(pages.length));
  (doc as unknown as { pageCache: { invalidate(): void } }).pageCache.invalidate();
}
