/**
 * What the revisions after a signed one changed: every object added or altered between the document as
 * it was at `end` (the signed revision) and as it is now, each classified (signature, validation data,
 * form, annotation, content) so verify can say whether the changes are ones a signature allows.
 */
import { PDFArray, PDFDict, PDFDocument, PDFName, type PDFObject, PDFRawStream, PDFRef, PDFStream } from '@cantoo/pdf-lib';

export interface Change {
  object: string;
  action: 'added' | 'modified';
  kind: 'signature' | 'validation_data' | 'form' | 'annotation' | 'page' | 'catalog' | 'content';
  description: string;
}

const serial = (o: PDFObject | undefined): string => {
  if (!o) return '';
  if (o instanceof PDFRawStream) return `${o.dict.toString()}|${o.contents.length}|${hashBytes(o.contents)}`;
  if (o instanceof PDFStream) return `${o.dict.toString()}|${hashBytes(o.getContents())}`;
  return o.toString();
};

function hashBytes(b: Uint8Array): number {
  let h = 2166136261;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 16777619);
  return h >>> 0;
}

export async function laterChanges(file: Uint8Array, end: number): Promise<Change[]> {
  const opts = { ignoreEncryption: true, updateMetadata: false, throwOnInvalidObject: false };
  const [before, after] = await Promise.all([PDFDocument.load(file.subarray(0, end), opts), PDFDocument.load(file, opts)]);
  const dssRefs = new Set<string>();
  const dss = after.catalog.lookupMaybe(PDFName.of('DSS'), PDFDict);
  if (dss) {
    const ref = after.catalog.get(PDFName.of('DSS'));
    if (ref instanceof PDFRef) dssRefs.add(ref.toString());
    for (const k of ['Certs', 'OCSPs', 'CRLs']) {
      const arr = dss.lookupMaybe(PDFName.of(k), PDFArray);
      for (const r of arr?.asArray() ?? []) if (r instanceof PDFRef) dssRefs.add(r.toString());
    }
  }
  const out: Change[] = [];
  const rootRef = after.context.trailerInfo.Root?.toString();
  const formRef = after.catalog.get(PDFName.of('AcroForm'))?.toString();
  const pageRefs = new Set(after.getPages().map((p) => p.ref.toString()));
  for (const [ref, obj] of after.context.enumerateIndirectObjects()) {
    const key = ref.toString();
    const old = before.context.lookup(ref);
    if (old && serial(old) === serial(obj)) continue;
    const action = old ? 'modified' : 'added';
    const kind = classify(key, obj, old, { dssRefs, rootRef, formRef, pageRefs });
    out.push({ object: key, action, kind: kind.kind, description: `${action} ${key}: ${kind.what}` });
  }
  return out.filter((c) => c.kind !== 'catalog' || c.description.includes('changed'));
}

function classify(
  key: string,
  obj: PDFObject,
  old: PDFObject | undefined,
  ctx: { dssRefs: Set<string>; rootRef?: string; formRef?: string; pageRefs: Set<string> },
): { kind: Change['kind']; what: string } {
  if (ctx.dssRefs.has(key)) return { kind: 'validation_data', what: 'validation data (DSS)' };
  const dict = obj instanceof PDFDict ? obj : obj instanceof PDFStream ? obj.dict : undefined;
  const type = dict?.get(PDFName.of('Type'))?.toString();
  const subtype = dict?.get(PDFName.of('Subtype'))?.toString();
  if (type === '/Sig' || type === '/DocTimeStamp') return { kind: 'signature', what: 'a signature dictionary' };
  if (type === '/XRef' || type === '/ObjStm') return { kind: 'signature', what: 'cross-reference data' };
  if (subtype === '/Widget' && dict?.get(PDFName.of('FT'))?.toString() === '/Sig') return { kind: 'signature', what: 'a signature field' };
  if (key === ctx.formRef) return { kind: 'form', what: 'the form (AcroForm)' };
  if (key === ctx.rootRef && old instanceof PDFDict && obj instanceof PDFDict) {
    const changed = diffKeys(old, obj).filter((k) => !['AcroForm', 'DSS', 'Extensions', 'Perms'].includes(k));
    return changed.length
      ? { kind: 'content', what: `the catalog changed (${changed.join(', ')})` }
      : { kind: 'catalog', what: 'the catalog (form or validation data entries)' };
  }
  if (ctx.pageRefs.has(key) && old instanceof PDFDict && obj instanceof PDFDict) {
    const changed = diffKeys(old, obj).filter((k) => k !== 'Annots');
    return changed.length
      ? { kind: 'content', what: `a page changed (${changed.join(', ')})` }
      : { kind: 'annotation', what: "a page's annotation list" };
  }
  if (type === '/Annot' || (subtype && dict?.has(PDFName.of('Rect')))) {
    return subtype === '/Widget'
      ? { kind: 'form', what: 'a form field widget' }
      : { kind: 'annotation', what: `an annotation (${subtype ?? 'unknown'})` };
  }
  if (obj instanceof PDFArray && !old) return { kind: 'annotation', what: 'an array (annotations or fields)' };
  if (
    obj instanceof PDFArray && old instanceof PDFArray && obj.size() >= old.size() &&
    old.asArray().every((x, i) => x.toString() === obj.get(i).toString())
  ) {
    return { kind: 'annotation', what: 'an array grew (annotations or fields)' };
  }
  if (obj instanceof PDFStream && !old && subtype === '/Form') return { kind: 'annotation', what: 'an appearance stream' };
  if (
    !old && (type === '/Font' || type === '/FontDescriptor' || subtype === '/Image' || obj instanceof PDFStream || obj instanceof PDFDict)
  ) {
    return { kind: 'annotation', what: `a resource added for an appearance (${type ?? subtype ?? 'object'})` };
  }
  return {
    kind: 'content',
    what: old ? `an existing ${type ?? (obj instanceof PDFStream ? 'stream' : 'object')} was changed` : 'an object was added',
  };
}

function diffKeys(a: PDFDict, b: PDFDict): string[] {
  const keys = new Set([...a.keys(), ...b.keys()].map((k) => k.asString().replace(/^\//, '')));
  return [...keys].filter((k) => a.get(PDFName.of(k))?.toString() !== b.get(PDFName.of(k))?.toString());
}
