/**
 * The signature placeholder of an incremental update: a signature dictionary whose /Contents is a run
 * of zeros and whose /ByteRange is a fixed-width dummy, written by pdf-lib's incremental save (only
 * new and changed objects are appended, so earlier revisions and their signatures stay intact). After
 * the save the exact offsets are found, the byte range filled in, and the signature dropped into the
 * hole.
 */
import { PDFArray, PDFDict, PDFDocument, PDFHexString, PDFName, PDFNumber, type PDFPage, PDFRef } from '@cantoo/pdf-lib';
import { ServiceError } from '../../errors.ts';

const DUMMY = 9_999_999_999; // ten digits: wide enough for any offset in a file under 10 GB

export interface Prepared {
  /** the whole file with the update appended and the byte range filled in; /Contents still zeros */
  bytes: Uint8Array;
  /** offsets of '<' and after '>' of /Contents */
  holeStart: number;
  holeEnd: number;
  /** the two signed spans concatenated */
  signedBytes(): Uint8Array;
}

/** The /ByteRange and /Contents entries of a signature dictionary, as placeholders of `size` bytes. */
export function placeholderEntries(doc: PDFDocument, size: number): { ByteRange: PDFArray; Contents: PDFHexString } {
  const br = doc.context.obj([0, DUMMY, DUMMY, DUMMY]) as PDFArray;
  return { ByteRange: br, Contents: PDFHexString.of('0'.repeat(size * 2)) };
}

/** Appends the document's changes as one incremental update and locates the placeholder of `sigRef`. */
export async function commitWithPlaceholder(doc: PDFDocument, original: Uint8Array, sigRef: PDFRef): Promise<Prepared> {
  const full = await doc.commit({ useObjectStreams: false });
  const text = new TextDecoder('latin1').decode(full.subarray(original.length));
  const head = new RegExp(`(?:^|[\\r\\n\\s])${sigRef.objectNumber} ${sigRef.generationNumber} obj`).exec(text);
  if (!head) throw new ServiceError(500, 'internal_error', 'the signature dictionary was not written in the update');
  const from = head.index;
  const br = /\/ByteRange\s*\[\s*0\s+9999999999\s+9999999999\s+9999999999\s*\]/.exec(text.slice(from));
  const ct = /\/Contents\s*<(0+)>/.exec(text.slice(from));
  if (!br || !ct) throw new ServiceError(500, 'internal_error', 'the signature placeholder was not found in the update');
  const base = original.length + from;
  const holeStart = base + ct.index + ct[0].indexOf('<');
  const holeEnd = holeStart + ct[1]!.length + 2;
  const range = [0, holeStart, holeEnd, full.length - holeEnd];
  const brText = `/ByteRange [${range.join(' ')}]`;
  const brStart = base + br.index;
  if (brText.length > br[0].length) throw new ServiceError(500, 'internal_error', 'byte range does not fit');
  full.set(new TextEncoder().encode(brText.padEnd(br[0].length, ' ')), brStart);
  return {
    bytes: full,
    holeStart,
    holeEnd,
    signedBytes() {
      const out = new Uint8Array(holeStart + (full.length - holeEnd));
      out.set(full.subarray(0, holeStart), 0);
      out.set(full.subarray(holeEnd), holeStart);
      return out;
    },
  };
}

/** Writes the DER signature into the hole (hex, zero padded); 500 when it does not fit. */
export function fillHole(p: Pick<Prepared, 'bytes' | 'holeStart' | 'holeEnd'>, der: Uint8Array): Uint8Array {
  const room = (p.holeEnd - p.holeStart - 2) / 2;
  if (der.length > room) throw new PlaceholderTooSmall(der.length);
  let hex = '';
  for (const b of der) hex += b.toString(16).padStart(2, '0');
  p.bytes.set(new TextEncoder().encode(hex), p.holeStart + 1);
  return p.bytes;
}

export class PlaceholderTooSmall extends Error {
  constructor(readonly needed: number) {
    super(`signature of ${needed} bytes does not fit the placeholder`);
  }
}

/** The AcroForm of the catalog (created when missing), with its /Fields array. */
function acroForm(doc: PDFDocument): { form: PDFDict; fields: PDFArray } {
  let form = doc.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict);
  if (!form) {
    form = doc.context.obj({ Fields: [] }) as PDFDict;
    doc.catalog.set(PDFName.of('AcroForm'), doc.context.register(form));
  }
  let fields = form.lookupMaybe(PDFName.of('Fields'), PDFArray);
  if (!fields) {
    fields = doc.context.obj([]) as PDFArray;
    form.set(PDFName.of('Fields'), fields);
  }
  return { form, fields };
}

/** A signature field name not used yet: Signature1, Signature2, ... */
function freeFieldName(doc: PDFDocument, fields: PDFArray, wanted?: string): string {
  const names = new Set<string>();
  for (let i = 0; i < fields.size(); i++) {
    const f = doc.context.lookupMaybe(fields.get(i), PDFDict);
    const t = f?.get(PDFName.of('T'));
    if (t && 'decodeText' in t) names.add((t as unknown as { decodeText(): string }).decodeText());
  }
  if (wanted) {
    if (names.has(wanted)) throw new ServiceError(400, 'invalid_argument', `a field named "${wanted}" already exists`);
    return wanted;
  }
  for (let n = 1;; n++) if (!names.has(`Signature${n}`)) return `Signature${n}`;
}

export const num = (n: number) => PDFNumber.of(Math.round(n * 1000) / 1000);

/**
 * Adds an annotation to a page touching only /Annots (pdf-lib's addAnnot also normalizes /Contents,
 * which a verifier rightly reports as a change to the signed page).
 */
function addAnnotation(doc: PDFDocument, page: PDFDict, ref: PDFRef): void {
  const annots = page.lookupMaybe(PDFName.of('Annots'), PDFArray);
  if (annots) annots.push(ref);
  else page.set(PDFName.of('Annots'), doc.context.obj([ref]));
}

/**
 * The field of a signature or document timestamp: a /Sig widget on `page` pointing at `sigRef`, with the
 * appearance `ap` in `rect` ([x, y, width, height]; all zero for an invisible one), listed in the AcroForm
 * (SigFlags 3). Returns the field's name (`fieldName`, or the first free SignatureN).
 */
export function addSignatureWidget(
  doc: PDFDocument,
  o: { sigRef: PDFRef; page: PDFPage; rect: [number, number, number, number]; ap: PDFRef; fieldName?: string },
): string {
  const { form, fields } = acroForm(doc);
  const field = freeFieldName(doc, fields, o.fieldName);
  const [x, y, w, h] = o.rect;
  const widgetRef = doc.context.register(doc.context.obj({
    Type: 'Annot',
    Subtype: 'Widget',
    FT: 'Sig',
    T: PDFHexString.fromText(field),
    V: o.sigRef,
    F: 132,
    P: o.page.ref,
    Rect: [num(x), num(y), num(x + w), num(y + h)],
    AP: { N: o.ap },
  }));
  fields.push(widgetRef);
  form.set(PDFName.of('SigFlags'), PDFNumber.of(3));
  addAnnotation(doc, o.page.node, widgetRef);
  return field;
}
