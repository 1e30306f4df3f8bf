/**
 * CMS (PKCS#7) signatures for PDFs as PAdES baseline wants them: detached SignedData over the byte
 * range digest, signed attributes content-type, message-digest and ESS signing-certificate-v2 (no
 * signing-time: the signing time lives in the signature dictionary's /M), the whole certificate
 * chain, and optionally a signature timestamp (RFC 3161) as an unsigned attribute. Built with pkijs.
 */
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { SigningIdentity } from './identity.ts';

export const OID = {
  data: '1.2.840.113549.1.7.1',
  signedData: '1.2.840.113549.1.7.2',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingTime: '1.2.840.113549.1.9.5',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  signatureTimeStampToken: '1.2.840.113549.1.9.16.2.14',
  tstInfo: '1.2.840.113549.1.9.16.1.4',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
  sha1: '1.3.14.3.2.26',
};

export const HASH_OIDS: Record<string, 'SHA-1' | 'SHA-256' | 'SHA-384' | 'SHA-512'> = {
  [OID.sha1]: 'SHA-1',
  [OID.sha256]: 'SHA-256',
  [OID.sha384]: 'SHA-384',
  [OID.sha512]: 'SHA-512',
};
export const hashOid = (h: string) => Object.entries(HASH_OIDS).find(([, n]) => n === h)![0];

export const ab = (b: Uint8Array): ArrayBuffer => b.slice().buffer as ArrayBuffer;
export const digest = async (alg: string, data: Uint8Array) => new Uint8Array(await crypto.subtle.digest(alg, ab(data)));

/** ESS SigningCertificateV2 with one ESSCertIDv2 (SHA-256, issuer and serial). */
async function signingCertificateV2(cert: pkijs.Certificate): Promise<asn1js.Sequence> {
  const certHash = await digest('SHA-256', new Uint8Array(cert.toSchema().toBER()));
  const issuerSerial = new asn1js.Sequence({
    value: [
      new asn1js.Sequence({ value: [new pkijs.GeneralName({ type: 4, value: cert.issuer }).toSchema()] }),
      cert.serialNumber,
    ],
  });
  const essCertIdV2 = new asn1js.Sequence({ value: [new asn1js.OctetString({ valueHex: ab(certHash) }), issuerSerial] });
  return new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertIdV2] })] });
}

export interface CmsOptions {
  /** returns an RFC 3161 TimeStampToken (ContentInfo DER) over the given signature value */
  timestamp?: (signatureValue: Uint8Array) => Promise<Uint8Array>;
}

/** A detached CAdES signature of `contentDigest` (the hash, with the identity's hash algorithm, of the signed bytes). */
export async function buildCms(id: SigningIdentity, contentDigest: Uint8Array, opts: CmsOptions = {}): Promise<Uint8Array> {
  const signedAttrs = new pkijs.SignedAndUnsignedAttributes({
    type: 0,
    attributes: [
      new pkijs.Attribute({ type: OID.contentType, values: [new asn1js.ObjectIdentifier({ value: OID.data })] }),
      new pkijs.Attribute({ type: OID.messageDigest, values: [new asn1js.OctetString({ valueHex: ab(contentDigest) })] }),
      new pkijs.Attribute({ type: OID.signingCertificateV2, values: [await signingCertificateV2(id.cert)] }),
    ],
  });
  const signer = new pkijs.SignerInfo({
    version: 1,
    sid: new pkijs.IssuerAndSerialNumber({ issuer: id.cert.issuer, serialNumber: id.cert.serialNumber }),
    signedAttrs,
  });
  const sd = new pkijs.SignedData({
    version: 1,
    encapContentInfo: new pkijs.EncapsulatedContentInfo({ eContentType: OID.data }),
    signerInfos: [signer],
    certificates: [id.cert, ...id.chain],
  });
  await sd.sign(id.key, 0, id.hash);
  if (opts.timestamp) {
    const token = await opts.timestamp(new Uint8Array(signer.signature.valueBlock.valueHexView));
    signer.unsignedAttrs = new pkijs.SignedAndUnsignedAttributes({
      type: 1,
      attributes: [
        new pkijs.Attribute({ type: OID.signatureTimeStampToken, values: [asn1js.fromBER(ab(token)).result] }),
      ],
    });
  }
  return contentInfo(sd);
}

export function contentInfo(sd: pkijs.SignedData): Uint8Array {
  return new Uint8Array(new pkijs.ContentInfo({ contentType: OID.signedData, content: sd.toSchema(true) }).toSchema().toBER());
}

/** Parses a CMS ContentInfo(SignedData), tolerating the zero padding of a PDF /Contents. */
export function parseSignedData(der: Uint8Array): pkijs.SignedData {
  const asn = asn1js.fromBER(ab(der));
  if (asn.offset === -1) throw new Error(`not DER: ${asn.result.error}`);
  const ci = new pkijs.ContentInfo({ schema: asn.result });
  if (ci.contentType !== OID.signedData) throw new Error(`content type ${ci.contentType} is not SignedData`);
  return new pkijs.SignedData({ schema: ci.content });
}

/** The DER length of the leading ASN.1 element (the CMS without the zero padding after it). */
export function derLength(b: Uint8Array): number {
  if (b[0] !== 0x30) return 0;
  const l = b[1]!;
  if (l < 0x80) return 2 + l;
  const n = l & 0x7f;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + b[2 + i]!;
  return 2 + n + len;
}
