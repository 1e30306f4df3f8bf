/**
 * Drop objects nothing references any more. pdf-lib writes every object it holds, so after removing a
 * watermark its form, font and image objects would stay in the file (invisible, but extractable).
 */
import { PDFArray, PDFDict, type PDFDocument, type PDFObject, PDFRef, PDFStream } from '@cantoo/pdf-lib';

export function dropUnreachable(doc: PDFDocument): number {
  const ctx = doc.context;
  const reachable = new Set<PDFRef>();
  const stack: PDFObject[] = [];
  const t = ctx.trailerInfo;
  for (const v of [t.Root, t.Info, t.ID, t.Encrypt]) if (v) stack.push(v as PDFObject);
  while (stack.length) {
    const o = stack.pop()!;
    if (o instanceof PDFRef) {
      if (reachable.has(o)) continue;
      reachable.add(o);
      const v = ctx.lookup(o);
      if (v) stack.push(v);
    } else if (o instanceof PDFDict) { for (const [, v] of o.entries()) stack.push(v); }
    else if (o instanceof PDFArray) { for (const v of o.asArray()) stack.push(v); }
    else if (o instanceof PDFStream) stack.push(o.dict);
  }
  let dropped = 0;
  for (const [ref] of ctx.enumerateIndirectObjects()) {
    if (!reachable.has(ref)) {
      ctx.delete(ref);
      dropped++;
    }
  }
  return dropped;
}
