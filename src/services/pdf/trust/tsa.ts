/**
 * RFC 3161 time-stamping client: a TimeStampReq over a digest, POSTed to a TSA through the egress
 * policy; the answer's status, message imprint and nonce are checked before its token is used.
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { ServiceError } from '../../errors.ts';
import { ab, hashOid, OID } from './cms.ts';
import type { TrustNet } from './net.ts';

export interface Timestamp {
  /** the TimeStampToken: a ContentInfo(SignedData) whose content is TSTInfo */
  token: Uint8Array;
  time: Date;
}

/**
 * A positive nonce whose DER INTEGER is minimal: the top bit clear (not negative) and the next one set
 * (no leading zero byte). A nonce that starts with 0x00 then a byte below 0x80 is not DER, and a TSA that
 * decodes strictly (OpenSSL does) refuses the whole query: one request in 256 failed before this.
 */
export function nonceOf(random: Uint8Array): Uint8Array {
  const nonce = random.slice();
  nonce[0] = (nonce[0]! & 0x3f) | 0x40;
  return nonce;
}

/** the DER TimeStampReq (RFC 3161) over a digest, asking for the TSA's certificate */
export function timestampQuery(hashAlg: string, hashed: Uint8Array, nonce: Uint8Array): Uint8Array {
  const req = new pkijs.TimeStampReq({
    version: 1,
    messageImprint: new pkijs.MessageImprint({
      hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: hashOid(hashAlg) }),
      hashedMessage: new asn1js.OctetString({ valueHex: ab(hashed) }),
    }),
    certReq: true,
    nonce: new asn1js.Integer({ valueHex: ab(nonce) }),
  });
  return new Uint8Array(req.toSchema().toBER());
}

const tsaFailed = (m: string) => new ServiceError(502, 'timestamp_failed', m);

export async function requestTimestamp(
  net: TrustNet,
  url: string,
  hashAlg: string,
  hashed: Uint8Array,
  signal?: AbortSignal,
): Promise<Timestamp> {
  const nonce = nonceOf(crypto.getRandomValues(new Uint8Array(8)));
  const body = await net.request(url, {
    body: timestampQuery(hashAlg, hashed, nonce),
    contentType: 'application/timestamp-query',
    accept: 'application/timestamp-reply',
    signal,
  });
  let resp: pkijs.TimeStampResp;
  try {
    resp = pkijs.TimeStampResp.fromBER(ab(body));
  } catch (e) {
    throw tsaFailed(`The TSA at ${url} answered something that is not a TimeStampResp: ${(e as Error).message}`);
  }
  if (resp.status.status > 1 || !resp.timeStampToken) {
    throw tsaFailed(
      `The TSA at ${url} refused the request (PKIStatus ${resp.status.status}${
        resp.status.statusStrings ? `: ${resp.status.statusStrings.map((s) => s.valueBlock.value).join('; ')}` : ''
      }).`,
    );
  }
  const info = tstInfoOf(resp.timeStampToken);
  const imprint = new Uint8Array(info.messageImprint.hashedMessage.valueBlock.valueHexView);
  if (imprint.length !== hashed.length || imprint.some((b, i) => b !== hashed[i])) {
    throw tsaFailed(`The TSA at ${url} stamped another digest than the one sent.`);
  }
  const gotNonce = info.nonce ? new Uint8Array(info.nonce.valueBlock.valueHexView) : undefined;
  if (!gotNonce || BigInt(`0x${hex(gotNonce)}`) !== BigInt(`0x${hex(nonce)}`)) {
    throw tsaFailed(`The TSA at ${url} answered with another nonce (a replayed or foreign answer).`);
  }
  return { token: new Uint8Array(resp.timeStampToken.toSchema().toBER()), time: info.genTime };
}

export function tstInfoOf(token: pkijs.ContentInfo | pkijs.SignedData): pkijs.TSTInfo {
  const sd = token instanceof pkijs.SignedData ? token : new pkijs.SignedData({ schema: token.content });
  if (sd.encapContentInfo.eContentType !== OID.tstInfo || !sd.encapContentInfo.eContent) throw new Error('the token carries no TSTInfo');
  return pkijs.TSTInfo.fromBER(sd.encapContentInfo.eContent.getValue());
}

export const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
