/**
 * pdfSign: a PAdES baseline signature (B-B; B-T with a signature timestamp; B-LT adds the validation
 * data; B-LTA adds a document timestamp over it), visible or invisible, optionally certifying (DocMDP),
 * appended as an incremental update so earlier signatures stay valid.
 */
import fontkit from '@cantoo/fontkit';
import {
  PDFArray,
  PDFDict,
  PDFDocument,
  type PDFFont,
  PDFHexString,
  type PDFImage,
  PDFName,
  PDFNumber,
  PDFRef,
  PDFString,
} from '@cantoo/pdf-lib';
import { invalidArgument, ServiceError } from '../../errors.ts';
import { drawableRuns } from '../fonts.ts';
import { buildCms, digest } from './cms.ts';
import { commonName, type SigningIdentity } from './identity.ts';
import type { TrustNet } from './net.ts';
import { addSignatureWidget, fillHole, num, placeholderEntries, PlaceholderTooSmall } from './placeholder.ts';
import { requestTimestamp } from './tsa.ts';
import { pdfLtv } from './pdf-ltv.ts';
import { loadForUpdate, pdfTimestamp, type PreparedUpdate, preparedUpdate } from './pdf-timestamp.ts';
import { workers } from '../../workers/index.ts';

export type PadesLevel = 'B-B' | 'B-T' | 'B-LT' | 'B-LTA';

export interface Appearance {
  /** 1-based page */
  page: number;
  /** [x, y, width, height] in points from the page's lower-left corner */
  rect: [number, number, number, number];
  /** lines to draw; default: signer, date, reason, location */
  text?: string;
  /** PNG or JPEG drawn on the left part (or the whole box without text) */
  image?: Uint8Array;
}

/** What the caller chooses about the signature field and its appearance. */
interface FieldChoices {
  reason?: string;
  location?: string;
  contactInfo?: string;
  fieldName?: string;
  /** visible signature; invisible when absent */
  appearance?: Appearance;
  /** DocMDP certification: 1 no changes, 2 form filling and signing, 3 also annotations */
  certify?: 1 | 2 | 3;
}

export interface SignOptions extends FieldChoices {
  identity: SigningIdentity;
  level?: PadesLevel;
  tsaUrl?: string;
  net: TrustNet;
  /** signing time written to /M (default now) */
  time?: Date;
  signal?: AbortSignal;
}

export interface SignResult {
  pdf: Uint8Array;
  field: string;
  level: PadesLevel;
  signer: string;
  /** genTime of the signature timestamp (B-T and above) */
  timestamp?: string;
  /** what B-LT added: certificates, OCSP responses, CRLs */
  validationData?: { certificates: number; ocsp: number; crls: number };
}

const LIMIT_TEXT = 500;

/** What the signature field and its appearance need: plain values, so the work can run in the worker pool. */
export interface SignatureField extends FieldChoices {
  /** the signer's common name (/Name, and the default appearance text) */
  signer: string;
  /** signing time, ms since the epoch */
  time: number;
}

/**
 * The CPU part of a signature (parse, checks, the field and its appearance, the incremental save with a
 * placeholder of `size` bytes, the digest of the signed bytes); runs in the worker pool as `pdf.sign-prepare`.
 */
export async function prepareSignature(bytes: Uint8Array, o: SignatureField & { size: number; hash: string }): Promise<PreparedUpdate> {
  const doc = await loadForUpdate(bytes);
  assertMayBeSigned(doc, !!o.certify);
  const { sigRef, field } = await addSignatureField(doc, o, o.size, new Date(o.time));
  return preparedUpdate(doc, bytes, sigRef, field, o.hash);
}

/** The PDF work runs in the worker pool; signing, the TSA and the OCSP/CRL requests happen here. */
export async function pdfSign(bytes: Uint8Array, o: SignOptions): Promise<SignResult> {
  const level = o.level ?? (o.tsaUrl ? 'B-T' : 'B-B');
  if (level !== 'B-B' && !o.tsaUrl) {
    throw invalidArgument(`level ${level} needs a time-stamping authority: give tsa_url.`, { field: 'tsa_url' });
  }
  for (
    const [k, v] of [['reason', o.reason], ['location', o.location], ['contact_info', o.contactInfo], [
      'appearance text',
      o.appearance?.text,
    ]] as const
  ) {
    if (v && v.length > LIMIT_TEXT) throw invalidArgument(`${k}: at most ${LIMIT_TEXT} characters.`);
  }
  const id = o.identity;
  const fieldOpts: SignatureField = {
    signer: commonName(id.cert),
    reason: o.reason,
    location: o.location,
    contactInfo: o.contactInfo,
    fieldName: o.fieldName,
    appearance: o.appearance,
    certify: o.certify,
    time: (o.time ?? new Date()).getTime(),
  };
  const initial = 8192 + [id.cert, ...id.chain].reduce((n, c) => n + c.toSchema().toBER().byteLength, 0) + (level === 'B-B' ? 0 : 8192);
  let size = initial;
  let ts: string | undefined;
  for (;;) {
    const prepared = await workers.run('pdf.sign-prepare', [bytes, { ...fieldOpts, size, hash: id.hash }], { signal: o.signal });
    const field = prepared.field;
    o.signal?.throwIfAborted();
    const cms = await buildCms(id, prepared.digest, {
      timestamp: level === 'B-B' ? undefined : async (sig) => {
        const t = await requestTimestamp(o.net, o.tsaUrl!, 'SHA-256', await digest('SHA-256', sig), o.signal);
        ts = t.time.toISOString();
        return t.token;
      },
    });
    try {
      let pdf = fillHole(prepared, cms);
      const result: SignResult = { pdf, field, level, signer: fieldOpts.signer, ...(ts ? { timestamp: ts } : {}) };
      if (level === 'B-LT' || level === 'B-LTA') {
        const ltv = await pdfLtv(pdf, { net: o.net, extraCertificates: id.chain, signal: o.signal });
        pdf = ltv.pdf;
        result.validationData = ltv.added;
      }
      if (level === 'B-LTA') pdf = (await pdfTimestamp(pdf, { tsaUrl: o.tsaUrl!, net: o.net, signal: o.signal })).pdf;
      result.pdf = pdf;
      return result;
    } catch (e) {
      if (!(e instanceof PlaceholderTooSmall) || size !== initial) throw e;
      size = e.needed + 2048; // once more with the measured size
    }
  }
}

/** A certified document whose DocMDP permission forbids signing, or certification over an existing signature, is refused. */
function assertMayBeSigned(doc: PDFDocument, certify: boolean) {
  const perms = doc.catalog.lookupMaybe(PDFName.of('Perms'), PDFDict);
  const mdpSig = perms?.lookupMaybe(PDFName.of('DocMDP'), PDFDict);
  if (mdpSig) {
    const refs = mdpSig.lookupMaybe(PDFName.of('Reference'), PDFArray);
    let p = 2;
    for (let i = 0; i < (refs?.size() ?? 0); i++) {
      const params = doc.context.lookupMaybe(refs!.get(i), PDFDict)?.lookupMaybe(PDFName.of('TransformParams'), PDFDict);
      const v = params?.lookupMaybe(PDFName.of('P'), PDFNumber)?.asNumber();
      if (v) p = v;
    }
    if (p === 1) {
      throw new ServiceError(
        422,
        'certified_no_changes',
        'The PDF is certified with DocMDP permission 1 (no changes allowed): another signature would break its certification.',
      );
    }
    if (certify) {
      throw new ServiceError(422, 'already_certified', 'The PDF is already certified; a document has at most one certification signature.');
    }
  }
  if (certify) {
    const form = doc.catalog.lookupMaybe(PDFName.of('AcroForm'), PDFDict);
    const fields = form?.lookupMaybe(PDFName.of('Fields'), PDFArray);
    for (let i = 0; i < (fields?.size() ?? 0); i++) {
      const f = doc.context.lookupMaybe(fields!.get(i), PDFDict);
      if (f?.get(PDFName.of('FT')) === PDFName.of('Sig') && f.has(PDFName.of('V'))) {
        throw new ServiceError(
          422,
          'certification_after_signature',
          'A certification signature must be the first signature of a document; this PDF is already signed.',
        );
      }
    }
  }
}

async function addSignatureField(
  doc: PDFDocument,
  o: SignatureField,
  size: number,
  time: Date,
): Promise<{ sigRef: PDFRef; field: string }> {
  const ctx = doc.context;
  const sig: Record<string, unknown> = {
    Type: 'Sig',
    Filter: 'Adobe.PPKLite',
    SubFilter: 'ETSI.CAdES.detached',
    ...placeholderEntries(doc, size),
    M: PDFString.fromDate(time),
    Name: PDFHexString.fromText(o.signer),
  };
  if (o.reason) sig.Reason = PDFHexString.fromText(o.reason);
  if (o.location) sig.Location = PDFHexString.fromText(o.location);
  if (o.contactInfo) sig.ContactInfo = PDFHexString.fromText(o.contactInfo);
  const sigDict = ctx.obj(sig as never) as unknown as PDFDict;
  if (o.certify) {
    const params = ctx.obj({ Type: 'TransformParams', P: o.certify, V: PDFName.of('1.2') });
    sigDict.set(PDFName.of('Reference'), ctx.obj([ctx.obj({ Type: 'SigRef', TransformMethod: 'DocMDP', TransformParams: params })]));
  }
  const sigRef = ctx.register(sigDict);
  if (o.certify) doc.catalog.set(PDFName.of('Perms'), ctx.obj({ DocMDP: sigRef }));

  const pages = doc.getPages();
  const pageNo = o.appearance?.page ?? 1;
  if (!Number.isInteger(pageNo) || pageNo < 1 || pageNo > pages.length) {
    throw invalidArgument(`appearance page ${pageNo} is outside the document (1–${pages.length}).`, { field: 'page' });
  }
  const rect = o.appearance?.rect ?? [0, 0, 0, 0];
  if (o.appearance && !(rect[2] > 0 && rect[3] > 0 && rect.every(Number.isFinite))) {
    throw invalidArgument('rect: [x, y, width, height] with a positive width and height.', { field: 'rect' });
  }
  const ap = await appearanceStream(doc, o, rect[2], rect[3], time);
  const field = addSignatureWidget(doc, { sigRef, page: pages[pageNo - 1]!, rect, ap, fieldName: o.fieldName });
  return { sigRef, field };
}

/** The widget's appearance: an empty form for an invisible signature, else the image and the text lines. */
async function appearanceStream(doc: PDFDocument, o: SignatureField, w: number, h: number, time: Date): Promise<PDFRef> {
  const ctx = doc.context;
  if (!o.appearance) return ctx.register(ctx.flateStream('', { Type: 'XObject', Subtype: 'Form', BBox: [0, 0, 0, 0], Resources: {} }));
  const a = o.appearance;
  const lines = (a.text ?? [
    `Digitally signed by ${o.signer}`,
    `Date: ${time.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}`,
    ...(o.reason ? [`Reason: ${o.reason}`] : []),
    ...(o.location ? [`Location: ${o.location}`] : []),
  ].join('\n')).split(/\r?\n/).filter((l, i, all) => l || i < all.length - 1);
  let ops = '';
  const xobjects: Record<string, PDFRef> = {};
  const fonts: Record<string, PDFRef> = {};
  let textX = 2;
  if (a.image) {
    const img = await embedImage(doc, a.image);
    const boxW = lines.length ? w * 0.35 : w;
    const scale = Math.min((boxW - 4) / img.width, (h - 4) / img.height);
    const iw = img.width * scale;
    const ih = img.height * scale;
    xobjects.Im0 = img.ref;
    ops += `q ${fmt(iw)} 0 0 ${fmt(ih)} ${fmt(2 + (boxW - 4 - iw) / 2)} ${fmt((h - ih) / 2)} cm /Im0 Do Q\n`;
    textX = boxW + 2;
  }
  if (lines.length) {
    doc.registerFontkit(fontkit);
    const byFont = new Map<Uint8Array, { name: string; font: PDFFont }>();
    const drawn: { runs: { name: string; font: PDFFont; text: string }[] }[] = [];
    for (const line of lines) {
      const runs = [];
      for (const run of await drawableRuns(line)) {
        let f = byFont.get(run.font.bytes);
        if (!f) {
          f = { name: `F${byFont.size}`, font: await doc.embedFont(run.font.bytes, { subset: true }) };
          byFont.set(run.font.bytes, f);
          fonts[f.name] = f.font.ref;
        }
        runs.push({ ...f, text: run.text });
      }
      drawn.push({ runs });
    }
    // the largest size at which every line fits the box
    const avail = w - textX - 2;
    const widest = Math.max(...drawn.map((l) => l.runs.reduce((s, r) => s + r.font.widthOfTextAtSize(r.text, 1), 0)), 0.01);
    const size = Math.max(2, Math.min(avail / widest, (h - 4) / (lines.length * 1.2), 14));
    let y = h - 2 - size;
    ops += 'BT 0 g\n';
    for (const line of drawn) {
      ops += `1 0 0 1 ${fmt(textX)} ${fmt(y)} Tm\n`;
      for (const r of line.runs) ops += `/${r.name} ${fmt(size)} Tf ${r.font.encodeText(r.text).toString()} Tj\n`;
      y -= size * 1.2;
    }
    ops += 'ET\n';
  }
  return ctx.register(
    ctx.flateStream(
      ops,
      { Type: 'XObject', Subtype: 'Form', BBox: [0, 0, num(w), num(h)], Resources: { Font: fonts, XObject: xobjects } } as never,
    ),
  );
}

async function embedImage(doc: PDFDocument, bytes: Uint8Array): Promise<PDFImage> {
  try {
    if (bytes[0] === 0x89 && bytes[1] === 0x50) return await doc.embedPng(bytes);
    if (bytes[0] === 0xff && bytes[1] === 0xd8) return await doc.embedJpg(bytes);
  } catch (e) {
    throw invalidArgument(`image: cannot be decoded: ${(e as Error).message}`, { field: 'image' });
  }
  throw invalidArgument('image: PNG or JPEG.', { field: 'image' });
}

const fmt = (n: number) => (Math.round(n * 1000) / 1000).toString();
