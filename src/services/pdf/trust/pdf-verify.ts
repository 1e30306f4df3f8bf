/**
 * pdfVerify: every signature and document timestamp of a PDF, each judged on integrity (the byte range
 * digest and the CMS signature), the signer's chain to the trust anchors, the signature timestamp,
 * revocation (DSS first, then online OCSP/CRL when the egress policy allows), and coverage (what later
 * revisions changed). Verdicts follow ETSI EN 319 102-1 in spirit: valid, invalid, or indeterminate
 * when something needed to decide is missing (an untrusted chain, no revocation answer).
 */
import { PDFDocument } from '@cantoo/pdf-lib';
import * as pkijs from 'pkijs';
import { ServiceError } from '../../errors.ts';
import { assertPdf } from '../open.ts';
import { pdfCorrupt } from '../reasons.ts';
import { ab, digest, HASH_OIDS, OID, parseSignedData } from './cms.ts';
import { certIssuer, certSubject, commonName, serialHex } from './identity.ts';
import type { TrustNet } from './net.ts';
import { cmsCertificates, readDss } from './pdf-ltv.ts';
import {
  fetchCrl,
  fetchOcsp,
  findIssuer,
  isSelfSigned,
  type RevocationStatus,
  sameCert,
  statusFromCrl,
  statusFromOcsp,
} from './revocation.ts';
import { type Change, laterChanges } from './revisions.ts';
import { readSignatures, signedBytes, type StoredSignature } from './signatures.ts';
import { tstInfoOf } from './tsa.ts';

export type Verdict = 'valid' | 'invalid' | 'indeterminate';

export interface VerifyOptions {
  trusted: pkijs.Certificate[];
  net: TrustNet;
  /** embedded: DSS only; online: DSS, then OCSP/CRL through the egress policy; off: no revocation check */
  revocation?: 'embedded' | 'online' | 'off';
  signal?: AbortSignal;
}

export interface CertInfo {
  subject: string;
  issuer: string;
  commonName: string;
  serial: string;
  notBefore: string;
  notAfter: string;
}

export interface SignatureReport {
  field: string;
  kind: 'signature' | 'document_timestamp';
  subFilter: string;
  signer?: CertInfo;
  signingTime?: string;
  signingTimeSource?: 'timestamp' | 'claimed';
  reason?: string;
  location?: string;
  contactInfo?: string;
  certification?: { level: number; meaning: string };
  byteRange: number[];
  revision: number;
  integrity: { valid: boolean; digestAlgorithm?: string; message: string };
  coverage: { wholeDocument: boolean; laterChanges: Change[]; allowed: boolean; message: string };
  chain: { trusted: boolean; path: string[]; message: string };
  timestamp?: { valid: boolean; time?: string; tsa?: string; trusted: boolean; message: string };
  revocation: RevocationStatus & { checked: boolean };
  verdict: Verdict;
  problems: string[];
}

export interface VerifyResult {
  verdict: Verdict | 'unsigned';
  message: string;
  signatures: SignatureReport[];
  revisions: number;
  dss: { certificates: number; ocsp: number; crls: number } | null;
}

const MDP: Record<number, string> = {
  1: 'no changes allowed',
  2: 'form filling and signing allowed',
  3: 'form filling, signing and annotations allowed',
};

export async function pdfVerify(bytes: Uint8Array, o: VerifyOptions): Promise<VerifyResult> {
  assertPdf(bytes);
  let doc: PDFDocument;
  try {
    doc = await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false, throwOnInvalidObject: false });
  } catch (e) {
    throw pdfCorrupt((e as Error).message);
  }
  // a file with a PDF header but no document catalog (truncated, or a header and nothing else)
  if (!(doc.catalog as unknown)) throw pdfCorrupt('the file has no document catalog.');
  if (doc.isEncrypted) {
    throw new ServiceError(
      422,
      'encrypted_document',
      'The PDF is encrypted: signatures of encrypted files are not verified here. Unlock it first (pdf-unlock) only if it carries no signatures you need to check.',
    );
  }
  const sigs = readSignatures(doc);
  const revisions = countRevisions(bytes);
  const dss = readDss(doc);
  const dssInfo = dss.dict ? { certificates: dss.certDer.length, ocsp: dss.ocsps.length, crls: dss.crls.length } : null;
  if (!sigs.length) return { verdict: 'unsigned', message: 'The PDF carries no signature.', signatures: [], revisions, dss: dssInfo };
  const certification = sigs.find((s) => s.certification)?.certification;
  const reports: SignatureReport[] = [];
  for (const s of sigs) {
    o.signal?.throwIfAborted();
    reports.push(await verifyOne(bytes, s, o, dss, certification));
  }
  const verdict: Verdict = reports.some((r) => r.verdict === 'invalid')
    ? 'invalid'
    : reports.some((r) => r.verdict === 'indeterminate')
    ? 'indeterminate'
    : 'valid';
  const bad = reports.filter((r) => r.verdict !== 'valid');
  const message = verdict === 'valid'
    ? `All ${reports.length} signature(s) are valid.`
    : bad.map((r) => `${r.field}: ${r.verdict} (${r.problems.join('; ')})`).join(' ');
  return { verdict, message, signatures: reports, revisions, dss: dssInfo };
}

async function verifyOne(
  file: Uint8Array,
  s: StoredSignature,
  o: VerifyOptions,
  dss: ReturnType<typeof readDss>,
  certLevel: number | undefined,
): Promise<SignatureReport> {
  const problems: string[] = [];
  const br = s.byteRange;
  const end = br.length === 4 ? br[2]! + br[3]! : NaN;
  const report: SignatureReport = {
    field: s.field,
    kind: s.kind,
    subFilter: s.subFilter,
    byteRange: br,
    revision: revisionOf(file, end),
    reason: s.reason,
    location: s.location,
    contactInfo: s.contactInfo,
    ...(s.certification ? { certification: { level: s.certification, meaning: MDP[s.certification] ?? 'unknown' } } : {}),
    integrity: { valid: false, message: '' },
    coverage: { wholeDocument: false, laterChanges: [], allowed: true, message: '' },
    chain: { trusted: false, path: [], message: '' },
    revocation: { status: 'unknown', source: 'none', checked: false },
    verdict: 'invalid',
    problems,
  };
  // the byte range must start at 0, leave exactly the /Contents string out, and stay inside the file
  const rangeOk = br.length === 4 && br.every((n) => Number.isInteger(n) && n >= 0) && br[0] === 0 && br[1]! < br[2]! &&
    end <= file.length &&
    file[br[1]!] === 0x3c && file[br[2]! - 1] === 0x3e;
  if (!rangeOk) {
    report.integrity.message = `the byte range ${JSON.stringify(br)} does not cover the file around exactly the /Contents value`;
    problems.push(report.integrity.message);
    return report;
  }
  let sd: pkijs.SignedData;
  try {
    sd = parseSignedData(s.cms);
  } catch (e) {
    report.integrity.message = `the /Contents is not a CMS SignedData: ${(e as Error).message}`;
    problems.push(report.integrity.message);
    return report;
  }
  const signed = signedBytes(file, br);
  const si = sd.signerInfos[0];
  if (!si) {
    report.integrity.message = 'the CMS has no signer';
    problems.push(report.integrity.message);
    return report;
  }
  const hashName = HASH_OIDS[si.digestAlgorithm.algorithmId] ?? 'SHA-256';
  report.integrity.digestAlgorithm = hashName;
  const certs = cmsCertificates(sd);
  const signerCert = (sd.certificates ?? []).find((c): c is pkijs.Certificate => c instanceof pkijs.Certificate && matchesSid(c, si.sid));
  if (signerCert) report.signer = certInfo(signerCert);
  const actual = await digest(hashName, signed);

  // integrity: the digest the signer signed vs the bytes in the file, then the signature over it
  let signedDigest: Uint8Array | undefined;
  let tstTime: Date | undefined;
  if (s.kind === 'document_timestamp') {
    try {
      const info = tstInfoOf(sd);
      signedDigest = new Uint8Array(info.messageImprint.hashedMessage.valueBlock.valueHexView);
      const h = HASH_OIDS[info.messageImprint.hashAlgorithm.algorithmId] ?? 'SHA-256';
      report.integrity.digestAlgorithm = h;
      const d = await digest(h, signed);
      tstTime = info.genTime;
      report.signingTime = info.genTime.toISOString();
      report.signingTimeSource = 'timestamp';
      report.integrity.valid = eq(d, signedDigest);
    } catch (e) {
      report.integrity.message = `the timestamp token carries no readable TSTInfo: ${(e as Error).message}`;
    }
  } else {
    const md = si.signedAttrs?.attributes.find((a) => a.type === OID.messageDigest)?.values[0];
    signedDigest = md ? new Uint8Array(md.valueBlock.valueHexView) : undefined;
    report.integrity.valid = !!signedDigest && eq(actual, signedDigest);
    if (s.claimedTime) {
      report.signingTime = s.claimedTime.toISOString();
      report.signingTimeSource = 'claimed';
    }
  }
  if (!report.integrity.valid && !report.integrity.message) {
    report.integrity.message = `the document was changed after signing: the signed bytes (offsets 0–${br[1]} and ${
      br[2]
    }–${end}, revision ${report.revision}) no longer match the signed ${report.integrity.digestAlgorithm} digest`;
  }
  if (report.integrity.valid) {
    const v = await cmsSignatureValid(sd, signed); // a timestamp token is checked against the stamped bytes too
    if (!v.ok) {
      report.integrity.valid = false;
      report.integrity.message = `the digest matches but the CMS signature does not verify with the signer's key: ${v.message}`;
    } else report.integrity.message = `the signed bytes are intact and the signature verifies (${report.integrity.digestAlgorithm})`;
  }
  if (!report.integrity.valid) problems.push(report.integrity.message);

  // signature timestamp (B-T)
  if (s.kind === 'signature') {
    const tokAttr = si.unsignedAttrs?.attributes.find((a) => a.type === OID.signatureTimeStampToken);
    if (tokAttr) {
      const t = await checkSignatureTimestamp(tokAttr.values[0], new Uint8Array(si.signature.valueBlock.valueHexView), o.trusted, [
        ...certs,
        ...dss.certs,
      ]);
      report.timestamp = t;
      if (t.valid && t.time) {
        tstTime = new Date(t.time);
        report.signingTime = t.time;
        report.signingTimeSource = 'timestamp';
      }
      if (!t.valid) problems.push(`signature timestamp: ${t.message}`);
    }
  }

  // chain to the trust anchors, at the signing time
  const at = tstTime ?? s.claimedTime ?? new Date();
  if (signerCert) {
    report.chain = await chainTo(signerCert, [...certs, ...dss.certs], o.trusted, at);
    if (!report.chain.trusted) problems.push(`chain: ${report.chain.message}`);
  } else {
    report.chain.message = 'the signer certificate is not in the signature';
    problems.push(report.chain.message);
  }

  // revocation
  if (signerCert && o.revocation !== 'off') {
    const issuer = await findIssuer(signerCert, [...certs, ...dss.certs, ...o.trusted]);
    if (isSelfSigned(signerCert)) {
      report.revocation = {
        status: 'unknown',
        source: 'none',
        checked: false,
        message: 'a self-signed certificate has no revocation source',
      };
    } else if (!issuer) {
      report.revocation = { status: 'unknown', source: 'none', checked: false, message: 'the issuer certificate is not available' };
    } else report.revocation = { ...(await revocationOf(signerCert, issuer, dss, o)), checked: true };
    if (report.revocation.status === 'revoked') {
      const when = report.revocation.revokedAt ? new Date(report.revocation.revokedAt) : undefined;
      // revoked after a trusted timestamp proves the signature existed before: still valid (PAdES B-T and above)
      if (!(tstTime && when && tstTime < when && report.timestamp?.trusted !== false)) {
        problems.push(
          `revocation: the signer certificate is revoked${when ? ` since ${when.toISOString()}` : ''} (${report.revocation.source})`,
        );
      }
    }
  }

  // coverage: what came after the signed revision
  report.coverage = await coverage(file, end, certLevel, s);
  if (!report.coverage.allowed) problems.push(`coverage: ${report.coverage.message}`);

  const invalid = !report.integrity.valid || (report.timestamp && !report.timestamp.valid) ||
    problems.some((p) => p.startsWith('revocation:')) || !report.coverage.allowed ||
    report.chain.message.startsWith('the certificate was not valid');
  report.verdict = invalid ? 'invalid' : report.chain.trusted ? 'valid' : 'indeterminate';
  return report;
}

function matchesSid(c: pkijs.Certificate, sid: unknown): boolean {
  if (sid instanceof pkijs.IssuerAndSerialNumber) return c.issuer.isEqual(sid.issuer) && c.serialNumber.isEqual(sid.serialNumber);
  return false;
}

const eq = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

function certInfo(c: pkijs.Certificate): CertInfo {
  return {
    subject: certSubject(c),
    issuer: certIssuer(c),
    commonName: commonName(c),
    serial: serialHex(c),
    notBefore: c.notBefore.value.toISOString(),
    notAfter: c.notAfter.value.toISOString(),
  };
}

async function cmsSignatureValid(sd: pkijs.SignedData, data: Uint8Array): Promise<{ ok: boolean; message: string }> {
  try {
    const r = await sd.verify({ signer: 0, data: ab(data), checkChain: false, extendedMode: true });
    return { ok: r.signatureVerified === true, message: r.message ?? 'signature mismatch' };
  } catch (e) {
    const err = e as { message?: string; signatureVerified?: boolean };
    return { ok: false, message: err.message ?? String(e) };
  }
}

async function checkSignatureTimestamp(
  tokenAsn: unknown,
  signatureValue: Uint8Array,
  trusted: pkijs.Certificate[],
  pool: pkijs.Certificate[],
): Promise<NonNullable<SignatureReport['timestamp']>> {
  try {
    const ci = new pkijs.ContentInfo({ schema: tokenAsn });
    const sd = new pkijs.SignedData({ schema: ci.content });
    const info = tstInfoOf(sd);
    const h = HASH_OIDS[info.messageImprint.hashAlgorithm.algorithmId] ?? 'SHA-256';
    const imprintOk = eq(await digest(h, signatureValue), new Uint8Array(info.messageImprint.hashedMessage.valueBlock.valueHexView));
    const v = await cmsSignatureValid(sd, signatureValue);
    const tsaCert = (sd.certificates ?? []).find((c): c is pkijs.Certificate =>
      c instanceof pkijs.Certificate && matchesSid(c, sd.signerInfos[0]?.sid)
    );
    const chain = tsaCert
      ? await chainTo(tsaCert, [...cmsCertificates(sd), ...pool], trusted, info.genTime)
      : { trusted: false, message: 'no TSA certificate in the token' };
    const time = info.genTime.toISOString();
    const tsa = tsaCert ? commonName(tsaCert) : undefined;
    if (!imprintOk) return { valid: false, time, tsa, trusted: chain.trusted, message: 'the timestamp is over another signature value' };
    if (!v.ok) {
      return { valid: false, time, tsa, trusted: chain.trusted, message: `the timestamp token's signature does not verify: ${v.message}` };
    }
    return {
      valid: true,
      time,
      tsa,
      trusted: chain.trusted,
      message: chain.trusted ? 'a trusted TSA stamped this signature' : `the token is intact; TSA chain: ${chain.message}`,
    };
  } catch (e) {
    return { valid: false, trusted: false, message: `unreadable timestamp token: ${(e as Error).message}` };
  }
}

/** Builds the path from `cert` to a trust anchor through `pool`, checking each link's signature and validity at `at`. */
async function chainTo(
  cert: pkijs.Certificate,
  pool: pkijs.Certificate[],
  trusted: pkijs.Certificate[],
  at: Date,
): Promise<SignatureReport['chain']> {
  const path: string[] = [certSubject(cert)];
  let cur = cert;
  for (let depth = 0; depth < 10; depth++) {
    if (!(cur.notBefore.value <= at && at <= cur.notAfter.value)) {
      return {
        trusted: false,
        path,
        message: `the certificate was not valid at ${at.toISOString()}: ${
          certSubject(cur)
        } is valid ${cur.notBefore.value.toISOString()} to ${cur.notAfter.value.toISOString()}`,
      };
    }
    if (trusted.some((t) => sameCert(t, cur))) return { trusted: true, path, message: `chains to the trust anchor ${certSubject(cur)}` };
    const anchor = await findIssuer(cur, trusted);
    if (anchor) {
      path.push(certSubject(anchor));
      return { trusted: true, path, message: `chains to the trust anchor ${certSubject(anchor)}` };
    }
    if (isSelfSigned(cur)) return { trusted: false, path, message: `the root ${certSubject(cur)} is not among the trusted certificates` };
    const next = await findIssuer(cur, pool);
    if (!next) {
      return {
        trusted: false,
        path,
        message: `the issuer of ${certSubject(cur)} (${certIssuer(cur)}) is neither trusted nor in the signature`,
      };
    }
    path.push(certSubject(next));
    cur = next;
  }
  return { trusted: false, path, message: 'the chain is longer than 10 certificates' };
}

async function revocationOf(
  c: pkijs.Certificate,
  issuer: pkijs.Certificate,
  dss: ReturnType<typeof readDss>,
  o: VerifyOptions,
): Promise<RevocationStatus> {
  for (const r of dss.ocsps) {
    const st = await statusFromOcsp(r, c, issuer);
    if (st && st.status !== 'unknown') return { ...st, source: 'dss' };
  }
  for (const r of dss.crls) {
    const st = await statusFromCrl(r, c, issuer);
    if (st && st.status !== 'unknown') return { ...st, source: 'dss' };
  }
  if (o.revocation !== 'online') {
    return {
      status: 'unknown',
      source: 'none',
      message: 'no revocation data in the document (DSS); ask for revocation "online" to query the responder',
    };
  }
  try {
    const ocsp = await fetchOcsp(o.net, c, issuer, o.signal);
    if (ocsp) {
      const st = await statusFromOcsp(ocsp, c, issuer);
      if (st) return st;
    }
    const crl = await fetchCrl(o.net, c, o.signal);
    if (crl) {
      const st = await statusFromCrl(crl, c, issuer);
      if (st) return st;
    }
    return { status: 'unknown', source: 'none', message: 'the certificate names no OCSP responder or CRL that the egress policy allows' };
  } catch (e) {
    return { status: 'unknown', source: 'none', message: `the revocation source could not be reached: ${(e as Error).message}` };
  }
}

async function coverage(
  file: Uint8Array,
  end: number,
  certLevel: number | undefined,
  s: StoredSignature,
): Promise<SignatureReport['coverage']> {
  if (end === file.length) return { wholeDocument: true, laterChanges: [], allowed: true, message: 'the signature covers the whole file' };
  const changes = await laterChanges(file, end);
  // DocMDP: P=1 nothing, P=2 form fill + signatures + DSS, P=3 also annotations; an approval signature
  // accepts the same as P=3 (adding content is what a signature must reveal)
  const level = certLevel ?? 3;
  const ok = (c: Change) =>
    c.kind === 'signature' || c.kind === 'validation_data' || c.kind === 'form' || (c.kind === 'annotation' && level >= 3);
  const disallowed = level === 1 && s.certification
    ? changes.filter((c) => c.kind !== 'validation_data' && c.kind !== 'signature')
    : changes.filter((c) => !ok(c));
  const kinds = [...new Set(changes.map((c) => c.kind))].join(', ');
  return disallowed.length
    ? {
      wholeDocument: false,
      laterChanges: changes,
      allowed: false,
      message: `later revisions changed the document beyond what its signatures allow: ${
        disallowed.slice(0, 5).map((c) => c.description).join('; ')
      }`,
    }
    : { wholeDocument: false, laterChanges: changes, allowed: true, message: `later revisions only added: ${kinds || 'nothing'}` };
}

/** Revisions = %%EOF markers at the ends of updates. */
function countRevisions(file: Uint8Array): number {
  return revisionEnds(file).length || 1;
}

function revisionEnds(file: Uint8Array): number[] {
  const text = new TextDecoder('latin1').decode(file);
  const out: number[] = [];
  const re = /%%EOF[ \t]*(\r\n|\r|\n)?/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push(m.index + m[0].length);
  return out;
}

function revisionOf(file: Uint8Array, end: number): number {
  const ends = revisionEnds(file);
  const i = ends.findIndex((e) => e >= end - 2);
  return i < 0 ? ends.length : i + 1;
}
