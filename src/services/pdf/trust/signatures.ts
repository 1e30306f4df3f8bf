/**
 * The signatures of a PDF as stored: every signature field (AcroForm, Kids followed) with a value,
 * its dictionary, byte range and the CMS bytes from /Contents without the zero padding.
 */
import { PDFArray, PDFDict, PDFDocument, PDFHexString, PDFName, PDFNumber, type PDFObject, PDFString } from '@cantoo/pdf-lib';
import { derLength } from './cms.ts';
import { parsedOrUndefined } from './lenient.ts';

export interface StoredSignature {
  field: string;
  dict: PDFDict;
  subFilter: string;
  /** DocTimeStamp (ETSI.RFC3161) or a signature */
  kind: 'signature' | 'document_timestamp';
  byteRange: number[];
  /** the /Contents value as stored (with its zero padding) */
  contentsRaw: Uint8Array;
  /** the DER of the CMS */
  cms: Uint8Array;
  reason?: string;
  location?: string;
  contactInfo?: string;
  name?: string;
  /** /M as a date */
  claimedTime?: Date;
  /** DocMDP P when this is a certification signature */
  certification?: number;
}

const text = (o: PDFObject | undefined) => (o instanceof PDFString || o instanceof PDFHexString ? o.decodeText() : undefined);

export function readSignatures(doc: PDFDocument): StoredSignature[] {
  const out: StoredSignature[] = [];
  const form = doc.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict);
  const fields = form?.lookupMaybe(PDFName.of('Fields'), PDFArray);
  const seen = new Set<PDFDict>();
  const visit = (f: PDFDict | undefined, prefix: string, depth: number) => {
    if (!f || seen.has(f) || depth > 20) return;
    seen.add(f);
    const t = text(f.get(PDFName.of('T')));
    const name = t ? (prefix ? `${prefix}.${t}` : t) : prefix;
    const kids = f.lookupMaybe(PDFName.of('Kids'), PDFArray);
    for (let i = 0; i < (kids?.size() ?? 0); i++) visit(doc.context.lookupMaybe(kids!.get(i), PDFDict), name, depth + 1);
    if (f.get(PDFName.of('FT')) !== PDFName.of('Sig')) return;
    const v = f.lookupMaybe(PDFName.of('V'), PDFDict);
    if (!v) return;
    const s = fromDict(doc, v, name || `(field ${out.length + 1})`);
    if (s) out.push(s);
  };
  for (let i = 0; i < (fields?.size() ?? 0); i++) visit(doc.context.lookupMaybe(fields!.get(i), PDFDict), '', 0);
  return out.sort((a, b) => (a.byteRange[2]! + a.byteRange[3]!) - (b.byteRange[2]! + b.byteRange[3]!));
}

function fromDict(doc: PDFDocument, v: PDFDict, field: string): StoredSignature | undefined {
  const br = v.lookupMaybe(PDFName.of('ByteRange'), PDFArray);
  const contents = v.get(PDFName.of('Contents'));
  if (!br || !(contents instanceof PDFHexString || contents instanceof PDFString)) return undefined;
  const byteRange = br.asArray().map((x) => (doc.context.lookup(x) as PDFNumber | undefined)?.asNumber?.() ?? NaN);
  const raw = contents.asBytes();
  const cms = raw.subarray(0, derLength(raw) || raw.length);
  const subFilter = v.get(PDFName.of('SubFilter'))?.toString().replace(/^\//, '') ?? '';
  const type = v.get(PDFName.of('Type'))?.toString();
  let certification: number | undefined;
  const refs = v.lookupMaybe(PDFName.of('Reference'), PDFArray);
  for (let i = 0; i < (refs?.size() ?? 0); i++) {
    const r = doc.context.lookupMaybe(refs!.get(i), PDFDict);
    if (r?.get(PDFName.of('TransformMethod')) === PDFName.of('DocMDP')) {
      certification = r.lookupMaybe(PDFName.of('TransformParams'), PDFDict)?.lookupMaybe(PDFName.of('P'), PDFNumber)?.asNumber() ?? 2;
    }
  }
  const m = v.get(PDFName.of('M'));
  const claimedTime = parsedOrUndefined(() => m instanceof PDFString || m instanceof PDFHexString ? m.decodeDate() : undefined);
  return {
    field,
    dict: v,
    subFilter,
    byteRange,
    contentsRaw: raw,
    cms,
    kind: type === '/DocTimeStamp' || subFilter === 'ETSI.RFC3161' ? 'document_timestamp' : 'signature',
    reason: text(v.get(PDFName.of('Reason'))),
    location: text(v.get(PDFName.of('Location'))),
    contactInfo: text(v.get(PDFName.of('ContactInfo'))),
    name: text(v.get(PDFName.of('Name'))),
    claimedTime,
    certification,
  };
}

/** The signed bytes of a byte range: the spans concatenated. */
export function signedBytes(file: Uint8Array, br: number[]): Uint8Array {
  const out = new Uint8Array(br[1]! + br[3]!);
  out.set(file.subarray(br[0]!, br[0]! + br[1]!), 0);
  out.set(file.subarray(br[2]!, br[2]! + br[3]!), br[1]!);
  return out;
}
