/**
 * How this service's watermarks are recognised: every object it adds for a mark carries the private key
 * /SvcWatermark true in its dictionary (the form XObject with the drawing, the two content streams that
 * wrap the page's own content in q ... Q and invoke the form). On the page the drawing also sits in
 * marked content /Artifact <</Type /Pagination /Subtype /Watermark>> so readers and accessibility tools
 * treat it as a watermark. Removal deletes exactly the tagged streams and resource entries.
 */
import { PDFArray, PDFBool, PDFDict, type PDFDocument, PDFName, type PDFPage, PDFRef, PDFStream } from '@cantoo/pdf-lib';
import { dropUnreachable } from './pdf-gc.ts';

export const TAG = PDFName.of('SvcWatermark');

const isTagged = (doc: PDFDocument, v: unknown): boolean => {
  const o = v instanceof PDFRef ? doc.context.lookup(v) : v;
  const dict = o instanceof PDFStream ? o.dict : o instanceof PDFDict ? o : undefined;
  return dict?.get(TAG) === PDFBool.True;
};

/** Remove tagged content streams and XObject entries from one page; returns how many marks it had. */
export function removeMarksFromPage(doc: PDFDocument, page: PDFPage): number {
  const node = page.node;
  let marks = 0;
  const contents = node.get(PDFName.of('Contents'));
  const arr = contents ? doc.context.lookup(contents) : undefined;
  if (arr instanceof PDFArray) {
    const keep = arr.asArray().filter((v) => !isTagged(doc, v));
    if (keep.length !== arr.size()) node.set(PDFName.of('Contents'), doc.context.obj(keep));
  }
  const res = node.Resources();
  const xobjs = res?.lookupMaybe(PDFName.of('XObject'), PDFDict);
  for (const [k, v] of xobjs?.entries() ?? []) {
    if (isTagged(doc, v)) {
      xobjs!.delete(k);
      marks++;
    }
  }
  return marks;
}

/** Remove marks from the given pages (all by default), then drop the objects they leave behind. */
export function removeMarks(doc: PDFDocument, pages: number[] = doc.getPages().map((_, i) => i)): number {
  let n = 0;
  for (const i of pages) n += removeMarksFromPage(doc, doc.getPage(i));
  if (n) dropUnreachable(doc);
  return n;
}
