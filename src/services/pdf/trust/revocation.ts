/**
 * Revocation data for certificates: OCSP (RFC 6960) requests to the responder named in the certificate's
 * Authority Information Access, CRLs from its distribution points, both through the egress policy; and
 * checking a certificate against OCSP responses and CRLs already at hand (a PDF's DSS).
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { ab } from './cms.ts';
import { parsedOrUndefined, verifies } from './lenient.ts';
import type { TrustNet } from './net.ts';

export interface RevocationStatus {
  status: 'good' | 'revoked' | 'unknown';
  /** where the answer came from */
  source: 'dss' | 'ocsp' | 'crl' | 'none';
  /** when the answer was produced (OCSP producedAt / CRL thisUpdate) */
  producedAt?: string;
  revokedAt?: string;
  message?: string;
}

const AIA = '1.3.6.1.5.5.7.1.1';
const OCSP_METHOD = '1.3.6.1.5.5.7.48.1';
const CRL_DP = '2.5.29.31';

const ext = (c: pkijs.Certificate, oid: string) => c.extensions?.find((e) => e.extnID === oid)?.parsedValue;

export function ocspUrls(c: pkijs.Certificate): string[] {
  const aia = ext(c, AIA) as pkijs.InfoAccess | undefined;
  return (aia?.accessDescriptions ?? []).filter((d) => d.accessMethod === OCSP_METHOD && d.accessLocation.type === 6).map((d) =>
    String(d.accessLocation.value)
  );
}

export function crlUrls(c: pkijs.Certificate): string[] {
  const dp = ext(c, CRL_DP) as pkijs.CRLDistributionPoints | undefined;
  const out: string[] = [];
  for (const p of dp?.distributionPoints ?? []) {
    for (const n of (Array.isArray(p.distributionPoint) ? p.distributionPoint : []) as pkijs.GeneralName[]) {
      if (n.type === 6) out.push(String(n.value));
    }
  }
  return out;
}

export const sameCert = (a: pkijs.Certificate, b: pkijs.Certificate) => {
  const x = new Uint8Array(a.toSchema().toBER());
  const y = new Uint8Array(b.toSchema().toBER());
  return x.length === y.length && x.every((v, i) => v === y[i]);
};

export const isSelfSigned = (c: pkijs.Certificate) => c.subject.isEqual(c.issuer);

/** The certificate among `pool` that issued `c` (name match and a verifying signature). */
export async function findIssuer(c: pkijs.Certificate, pool: pkijs.Certificate[]): Promise<pkijs.Certificate | undefined> {
  for (const p of pool) {
    if (p.subject.isEqual(c.issuer) && !sameCert(p, c) && (await verifies(() => c.verify(p)))) return p;
  }
  return undefined;
}

/** Asks the certificate's OCSP responder; the DER OCSPResponse, or undefined when it has none or none allowed. */
export async function fetchOcsp(
  net: TrustNet,
  c: pkijs.Certificate,
  issuer: pkijs.Certificate,
  signal?: AbortSignal,
): Promise<Uint8Array | undefined> {
  const url = ocspUrls(c).find((u) => net.allows(u));
  if (!url) return undefined;
  const req = new pkijs.OCSPRequest();
  await req.createForCertificate(c, { hashAlgorithm: 'SHA-1', issuerCertificate: issuer });
  const body = await net.request(url, {
    body: new Uint8Array(req.toSchema(true).toBER()),
    contentType: 'application/ocsp-request',
    accept: 'application/ocsp-response',
    signal,
  });
  const resp = pkijs.OCSPResponse.fromBER(ab(body));
  if (resp.responseStatus.valueBlock.valueDec !== 0) {
    throw new Error(`OCSP responder ${url} answered status ${resp.responseStatus.valueBlock.valueDec}`);
  }
  return body;
}

export async function fetchCrl(net: TrustNet, c: pkijs.Certificate, signal?: AbortSignal): Promise<Uint8Array | undefined> {
  const url = crlUrls(c).find((u) => net.allows(u));
  if (!url) return undefined;
  const der = await net.request(url, { signal });
  pkijs.CertificateRevocationList.fromBER(ab(der)); // must parse
  return der;
}

/** The status of `c` from one OCSP response, if the response is about it and signed by its issuer or a delegate. */
export async function statusFromOcsp(
  der: Uint8Array,
  c: pkijs.Certificate,
  issuer: pkijs.Certificate,
): Promise<RevocationStatus | undefined> {
  const basic = parsedOrUndefined(() => {
    const resp = pkijs.OCSPResponse.fromBER(ab(der));
    if (!resp.responseBytes) return undefined;
    return pkijs.BasicOCSPResponse.fromBER(resp.responseBytes.response.valueBlock.valueHexView.slice().buffer as ArrayBuffer);
  });
  if (!basic) return undefined;
  const st = await basic.getCertificateStatus(c, issuer);
  if (!st.isForCertificate) return undefined;
  const verified = await verifies(() => basic.verify({ trustedCerts: [issuer] }));
  const producedAt = basic.tbsResponseData.producedAt.toISOString();
  if (!verified) {
    return {
      status: 'unknown',
      source: 'ocsp',
      producedAt,
      message: 'the OCSP response is not signed by the issuer or a responder it delegated to',
    };
  }
  const single = basic.tbsResponseData.responses.find((r) => r.certID.serialNumber.isEqual(c.serialNumber));
  const revokedAt = st.status === 1 ? revocationTime(single) : undefined;
  return {
    status: st.status === 0 ? 'good' : st.status === 1 ? 'revoked' : 'unknown',
    source: 'ocsp',
    producedAt,
    ...(revokedAt ? { revokedAt } : {}),
  };
}

function revocationTime(single: pkijs.SingleResponse | undefined): string | undefined {
  const s = single?.certStatus as asn1js.Constructed | undefined;
  const t = s?.valueBlock?.value?.[0] as asn1js.GeneralizedTime | undefined;
  return parsedOrUndefined(() => t?.toDate().toISOString());
}

export async function statusFromCrl(
  der: Uint8Array,
  c: pkijs.Certificate,
  issuer: pkijs.Certificate,
): Promise<RevocationStatus | undefined> {
  const crl = parsedOrUndefined(() => pkijs.CertificateRevocationList.fromBER(ab(der)));
  if (!crl || !crl.issuer.isEqual(issuer.subject)) return undefined;
  const ok = await verifies(() => crl.verify({ issuerCertificate: issuer }));
  const producedAt = crl.thisUpdate.value.toISOString();
  if (!ok) return { status: 'unknown', source: 'crl', producedAt, message: 'the CRL is not signed by the issuer' };
  const entry = crl.revokedCertificates?.find((r) => r.userCertificate.isEqual(c.serialNumber));
  return entry
    ? { status: 'revoked', source: 'crl', producedAt, revokedAt: entry.revocationDate.value.toISOString() }
    : { status: 'good', source: 'crl', producedAt };
}
