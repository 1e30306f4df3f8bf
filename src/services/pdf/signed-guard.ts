/**
 * Operations that rewrite a PDF break its signatures. A signed input is refused with 422
 * signed_document unless the caller asks to drop the signatures: then the signature fields, their
 * widgets and values, the DocMDP permissions and the DSS are removed before the operation runs.
 */
import { PDFArray, PDFDict, type PDFDocument, PDFName, PDFRef } from '@cantoo/pdf-lib';
import { ServiceError } from '../errors.ts';
import { openPdf } from './open.ts';
import { countSignatures } from './pdf-structure.ts';

export function guardSigned(doc: PDFDocument, dropSignatures: boolean | undefined, what: string): number {
  const n = countSignatures(doc);
  if (!n) return 0;
  if (!dropSignatures) {
    throw new ServiceError(
      422,
      'signed_document',
      `The PDF is digitally signed; ${what} would invalidate the signature. Pass drop_signatures: true to remove the signatures and go on.`,
    );
  }
  return dropAllSignatures(doc);
}

/** For operations that offer no drop_signatures: a signed input is refused (`what`: what the operation does to the file). */
export function refuseSigned(doc: PDFDocument, what: string): void {
  if (countSignatures(doc) > 0) {
    throw new ServiceError(422, 'signed_document', `The PDF is digitally signed; ${what} and would invalidate the signature.`);
  }
}

export function dropAllSignatures(doc: PDFDocument): number {
  const ctx = doc.context;
  const isSigField = (d: PDFDict | undefined) => d?.get(PDFName.of('FT')) === PDFName.of('Sig');
  const form = doc.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict);
  const fields = form?.lookupMaybe(PDFName.of('Fields'), PDFArray);
  const removed = new Set<string>();
  if (fields) {
    const keep = fields.asArray().filter((r) => {
      if (isSigField(ctx.lookupMaybe(r, PDFDict))) {
        removed.add(r.toString());
        return false;
      }
      return true;
    });
    form!.set(PDFName.of('Fields'), ctx.obj(keep));
    form!.delete(PDFName.of('SigFlags'));
  }
  for (const page of doc.getPages()) {
    const annots = page.node.lookupMaybe(PDFName.of('Annots'), PDFArray);
    if (!annots) continue;
    const keep = annots.asArray().filter((r) => !(removed.has(r.toString()) || isSigField(ctx.lookupMaybe(r, PDFDict))));
    if (keep.length !== annots.size()) page.node.set(PDFName.of('Annots'), ctx.obj(keep));
  }
  doc.catalog.delete(PDFName.of('Perms'));
  doc.catalog.delete(PDFName.of('DSS'));
  let n = 0;
  for (const [ref, obj] of [...ctx.enumerateIndirectObjects()]) {
    if (!(obj instanceof PDFDict)) continue;
    const type = obj.get(PDFName.of('Type'));
    const isSig = type === PDFName.of('Sig') || type === PDFName.of('DocTimeStamp') ||
      (obj.has(PDFName.of('ByteRange')) && obj.has(PDFName.of('Contents')) && obj.has(PDFName.of('Filter')));
    if (isSig) {
      ctx.delete(ref as PDFRef);
      n++;
    } else if (isSigField(obj) && obj.get(PDFName.of('Subtype')) === PDFName.of('Widget')) ctx.delete(ref as PDFRef);
  }
  return n;
}

/** For engines other than pdf-lib: the input itself when unsigned, else refused or rewritten without its signatures. */
export async function withoutSignatures(
  bytes: Uint8Array,
  password: string | undefined,
  drop: boolean | undefined,
  what: string,
): Promise<{ bytes: Uint8Array; dropped: number }> {
  const { doc, encryption } = await openPdf(bytes, { password });
  if (!countSignatures(doc)) return { bytes, dropped: 0 };
  const dropped = guardSigned(doc, drop, what);
  if (encryption) {
    throw new ServiceError(
      422,
      'signed_document',
      'The PDF is signed and encrypted: unlock it first (pdf-unlock), then redact with drop_signatures.',
    );
  }
  return { bytes: await doc.save({ useObjectStreams: true }), dropped };
}
