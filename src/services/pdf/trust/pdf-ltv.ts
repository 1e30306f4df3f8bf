/**
 * pdfLtv: long-term validation data. For every signature and timestamp in the file, the certificates of
 * its chain, and an OCSP response (else a CRL) for each certificate below a root, go into the
 * document security store (/DSS with /Certs, /OCSPs, /CRLs and a /VRI entry per signature), appended as
 * an incremental update. Existing DSS content is kept.
 */
import { decodePDFRawStream, PDFArray, PDFDict, type PDFDocument, PDFName, PDFRawStream, type PDFRef } from '@cantoo/pdf-lib';
import * as pkijs from 'pkijs';
import { ServiceError } from '../../errors.ts';
import { digest, OID, parseSignedData } from './cms.ts';
import { certificatesOf } from './lenient.ts';
import type { TrustNet } from './net.ts';
import { fetchCrl, fetchOcsp, findIssuer, isSelfSigned, sameCert } from './revocation.ts';
import { readSignatures } from './signatures.ts';
import { loadForUpdate } from './pdf-timestamp.ts';
import { hex } from './tsa.ts';
import { workers } from '../../workers/index.ts';

export interface LtvOptions {
  net: TrustNet;
  /** certificates that may complete chains (intermediates, roots) */
  extraCertificates?: pkijs.Certificate[];
  signal?: AbortSignal;
}

export interface LtvResult {
  pdf: Uint8Array;
  added: { certificates: number; ocsp: number; crls: number };
  /** certificates for which no revocation data could be had, with why */
  missing: { subject: string; reason: string }[];
}

/** Every certificate a SignedData carries, its timestamp tokens' included. */
export function cmsCertificates(sd: pkijs.SignedData): pkijs.Certificate[] {
  const out = (sd.certificates ?? []).filter((c): c is pkijs.Certificate => c instanceof pkijs.Certificate);
  for (const si of sd.signerInfos) {
    for (const a of si.unsignedAttrs?.attributes ?? []) {
      if (a.type !== OID.signatureTimeStampToken) continue;
      try {
        const tok = new pkijs.ContentInfo({ schema: a.values[0] });
        out.push(...cmsCertificates(new pkijs.SignedData({ schema: tok.content })));
      } catch {
        // an unreadable token adds nothing
      }
    }
  }
  return out;
}

/** What the validation data is gathered for, read from the file (in the worker pool as `pdf.ltv-read`). */
export async function readLtvInputs(
  bytes: Uint8Array,
): Promise<{ signatures: { cms: Uint8Array; key: string }[]; dssCerts: Uint8Array[] }> {
  const doc = await loadForUpdate(bytes);
  const sigs = readSignatures(doc);
  if (!sigs.length) throw new ServiceError(422, 'not_signed', 'The PDF has no signature or document timestamp to add validation data for.');
  const signatures = [];
  for (const s of sigs) signatures.push({ cms: s.cms, key: hex(await digest('SHA-1', s.contentsRaw)).toUpperCase() });
  return { signatures, dssCerts: readDss(doc).certDer };
}

type Vri = { key: string; certs: number[]; ocsps: number[]; crls: number[] };

/** Appends the DSS as an incremental update, keeping what it held (in the worker pool as `pdf.ltv-write`). */
export async function writeLtv(
  bytes: Uint8Array,
  certs: Uint8Array[],
  ocsps: Uint8Array[],
  crls: Uint8Array[],
  vri: Vri[],
): Promise<Uint8Array> {
  const doc = await loadForUpdate(bytes);
  writeDss(doc, readDss(doc), certs, ocsps, crls, vri);
  return doc.commit({ useObjectStreams: false });
}

/** Reading and writing the PDF run in the worker pool; the OCSP and CRL requests are made here. */
export async function pdfLtv(bytes: Uint8Array, o: LtvOptions): Promise<LtvResult> {
  const read = await workers.run('pdf.ltv-read', [bytes], { signal: o.signal });
  const pool: pkijs.Certificate[] = [...(o.extraCertificates ?? []), ...certificatesOf(read.dssCerts)];
  const perSig: { key: string; certs: pkijs.Certificate[] }[] = [];
  for (const s of read.signatures) {
    let certs: pkijs.Certificate[] = [];
    try {
      certs = cmsCertificates(parseSignedData(s.cms));
    } catch {
      continue; // a broken signature gets no validation data
    }
    pool.push(...certs);
    perSig.push({ key: s.key, certs });
  }
  const uniq = (cs: pkijs.Certificate[]) => cs.filter((c, i) => cs.findIndex((d) => sameCert(c, d)) === i);
  const all = uniq(pool);
  const certsOut: pkijs.Certificate[] = [];
  const ocsps: Uint8Array[] = [];
  const crls: Uint8Array[] = [];
  const missing: LtvResult['missing'] = [];
  const vri: Vri[] = [];
  const done = new Map<pkijs.Certificate, { ocsp?: number; crl?: number }>();
  for (const s of perSig) {
    const entry = { key: s.key, certs: [] as number[], ocsps: [] as number[], crls: [] as number[] };
    // the chain of each certificate in the signature, up to a self-signed root
    const todo = uniq(s.certs);
    for (let i = 0; i < todo.length; i++) {
      const c = todo[i]!;
      let idx = certsOut.findIndex((d) => sameCert(c, d));
      if (idx < 0) idx = certsOut.push(c) - 1;
      entry.certs.push(idx);
      if (isSelfSigned(c)) continue;
      const issuer = await findIssuer(c, all);
      if (!issuer) {
        missing.push({ subject: subjectOf(c), reason: 'its issuer certificate is not available' });
        continue;
      }
      if (!todo.some((d) => sameCert(d, issuer))) todo.push(issuer);
      const key = all.find((d) => sameCert(d, c))!;
      let got = done.get(key);
      if (!got) {
        got = {};
        try {
          const r = await fetchOcsp(o.net, c, issuer, o.signal);
          if (r) got.ocsp = ocsps.push(r) - 1;
        } catch (e) {
          missing.push({ subject: subjectOf(c), reason: `OCSP failed: ${(e as Error).message}` });
        }
        if (got.ocsp === undefined) {
          try {
            const r = await fetchCrl(o.net, c, o.signal);
            if (r) got.crl = crls.push(r) - 1;
          } catch (e) {
            missing.push({ subject: subjectOf(c), reason: `CRL failed: ${(e as Error).message}` });
          }
        }
        if (got.ocsp === undefined && got.crl === undefined && !missing.some((m) => m.subject === subjectOf(c))) {
          missing.push({ subject: subjectOf(c), reason: 'no OCSP responder or CRL distribution point that the egress policy allows' });
        }
        done.set(key, got);
      }
      if (got.ocsp !== undefined) entry.ocsps.push(got.ocsp);
      if (got.crl !== undefined) entry.crls.push(got.crl);
    }
    vri.push(entry);
  }
  const pdf = await workers.run('pdf.ltv-write', [bytes, certsOut.map((c) => new Uint8Array(c.toSchema().toBER())), ocsps, crls, vri], {
    signal: o.signal,
  });
  return { pdf, added: { certificates: certsOut.length, ocsp: ocsps.length, crls: crls.length }, missing };
}

const subjectOf = (c: pkijs.Certificate) =>
  c.subject.typesAndValues.map((t) => (t.value.valueBlock as { value?: string }).value).join(', ');

interface Dss {
  dict?: PDFDict;
  certs: pkijs.Certificate[];
  certDer: Uint8Array[];
  ocsps: Uint8Array[];
  crls: Uint8Array[];
}

/** The DSS of a document: its certificates, OCSP responses and CRLs (decoded streams). */
export function readDss(doc: PDFDocument): Dss {
  const dict = doc.catalog.lookupMaybe(PDFName.of('DSS'), PDFDict);
  const streams = (name: string) => {
    const arr = dict?.lookupMaybe(PDFName.of(name), PDFArray);
    const out: Uint8Array[] = [];
    for (let i = 0; i < (arr?.size() ?? 0); i++) {
      const s = doc.context.lookup(arr!.get(i));
      if (s && 'getContents' in s) {
        try {
          out.push(streamBytes(s as never));
        } catch {
          // unreadable stream: skipped
        }
      }
    }
    return out;
  };
  const certDer = streams('Certs');
  return { dict, certs: certificatesOf(certDer), certDer, ocsps: streams('OCSPs'), crls: streams('CRLs') };
}

function streamBytes(s: { getContents(): Uint8Array; dict: PDFDict }): Uint8Array {
  // DSS streams are written uncompressed or Flate; pdf-lib's decoder handles both
  return s instanceof PDFRawStream ? decodePDFRawStream(s).decode() : s.getContents();
}

function writeDss(
  doc: PDFDocument,
  old: Dss,
  certs: Uint8Array[],
  ocsps: Uint8Array[],
  crls: Uint8Array[],
  vri: { key: string; certs: number[]; ocsps: number[]; crls: number[] }[],
) {
  const ctx = doc.context;
  const dss = old.dict ?? (ctx.obj({ Type: 'DSS' }) as PDFDict);
  const add = (name: string, items: Uint8Array[], have: Uint8Array[]): PDFRef[] => {
    let arr = dss.lookupMaybe(PDFName.of(name), PDFArray);
    if (!arr) {
      arr = ctx.obj([]) as PDFArray;
      dss.set(PDFName.of(name), arr);
    }
    const refs: PDFRef[] = [];
    for (const it of items) {
      const at = have.findIndex((h) => h.length === it.length && h.every((b, i) => b === it[i]));
      if (at >= 0) {
        refs.push(arr.get(at) as PDFRef);
        continue;
      }
      const ref = ctx.register(ctx.flateStream(it));
      arr.push(ref);
      refs.push(ref);
    }
    return refs;
  };
  const certRefs = add('Certs', certs, old.certDer);
  const ocspRefs = add('OCSPs', ocsps, old.ocsps);
  const crlRefs = add('CRLs', crls, old.crls);
  let vriDict = dss.lookupMaybe(PDFName.of('VRI'), PDFDict);
  if (!vriDict) {
    vriDict = ctx.obj({}) as PDFDict;
    dss.set(PDFName.of('VRI'), vriDict);
  }
  for (const v of vri) {
    const e: Record<string, unknown> = { Cert: v.certs.map((i) => certRefs[i]) };
    if (v.ocsps.length) e.OCSP = v.ocsps.map((i) => ocspRefs[i]);
    if (v.crls.length) e.CRL = v.crls.map((i) => crlRefs[i]);
    vriDict.set(PDFName.of(v.key), ctx.obj(e as never));
  }
  if (!old.dict) doc.catalog.set(PDFName.of('DSS'), ctx.register(dss));
  // the catalog's /Extensions tells readers that ESIC (PAdES) features are used
  if (!doc.catalog.has(PDFName.of('Extensions'))) {
    doc.catalog.set(PDFName.of('Extensions'), ctx.obj({ ESIC: { BaseVersion: PDFName.of('1.7'), ExtensionLevel: 5 } }));
  }
}
