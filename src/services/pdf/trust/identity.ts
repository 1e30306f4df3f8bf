/**
 * A signing identity: private key (WebCrypto) + certificate + the rest of its chain, read from a
 * PKCS#12 file (node-forge decrypts it) or from PEM key and chain. RSA (PKCS#1 v1.5) and ECDSA keys.
 */
import forge from 'node-forge';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { invalidArgument, ServiceError } from '../../errors.ts';
import { verifies } from './lenient.ts';

export interface SigningIdentity {
  key: CryptoKey;
  /** the signer's certificate */
  cert: pkijs.Certificate;
  /** the other certificates given (intermediates, root), in the order given */
  chain: pkijs.Certificate[];
  /** "RSA" or "ECDSA" */
  kind: 'RSA' | 'ECDSA';
  /** the curve (ECDSA) or the modulus length (RSA), for the signature algorithm choice */
  hash: 'SHA-256' | 'SHA-384' | 'SHA-512';
}

export const badIdentity = (message: string) => new ServiceError(400, 'invalid_certificate', message);

const latin1 = (b: Uint8Array) => {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
  return s;
};
const fromLatin1 = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const ab = (b: Uint8Array) => b.slice().buffer as ArrayBuffer;

/** Every PEM block of the given label(s) in `text`, as DER. */
export function pemBlocks(text: string, labels: string[]): { label: string; der: Uint8Array }[] {
  const out: { label: string; der: Uint8Array }[] = [];
  const re = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (!labels.includes(m[1]!)) continue;
    const b64 = m[2]!.replace(/^[A-Za-z-]+:.*$/gm, '').replace(/\s+/g, '');
    out.push({ label: m[1]!, der: fromLatin1(atob(b64)) });
  }
  return out;
}

export function parseCertificate(der: Uint8Array): pkijs.Certificate {
  try {
    return pkijs.Certificate.fromBER(ab(der));
  } catch (e) {
    throw badIdentity(`a certificate is not valid DER X.509: ${(e as Error).message}`);
  }
}

/** Certificates from PEM text (one or more) or a single DER certificate. */
export function parseCertificates(data: string | Uint8Array, field: string): pkijs.Certificate[] {
  const text = typeof data === 'string' ? data : new TextDecoder('latin1').decode(data);
  const blocks = pemBlocks(text, ['CERTIFICATE', 'TRUSTED CERTIFICATE']);
  if (blocks.length) return blocks.map((b) => parseCertificate(b.der));
  if (typeof data !== 'string' && data[0] === 0x30) return [parseCertificate(data)];
  throw invalidArgument(`${field}: no PEM certificate (-----BEGIN CERTIFICATE-----) found.`, { field });
}

/** Reads a PKCS#12 (.p12/.pfx) with its password. */
export async function identityFromPkcs12(p12: Uint8Array, password: string): Promise<SigningIdentity> {
  let parsed: forge.pkcs12.Pkcs12Pfx;
  try {
    const asn = forge.asn1.fromDer(forge.util.createBuffer(latin1(p12)));
    parsed = forge.pkcs12.pkcs12FromAsn1(asn, false, password);
  } catch (e) {
    const msg = (e as Error).message ?? String(e);
    if (/mac|password|invalid pkcs#12|decrypt/i.test(msg)) {
      throw new ServiceError(400, 'certificate_password_incorrect', `The PKCS#12 file could not be opened with the password given: ${msg}`);
    }
    throw badIdentity(`The certificate file is not a readable PKCS#12 (.p12/.pfx): ${msg}`);
  }
  const keyBags = [
    ...(parsed.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag] ?? []),
    ...(parsed.getBags({ bagType: forge.pki.oids.keyBag })[forge.pki.oids.keyBag] ?? []),
  ];
  const certBags = parsed.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag] ?? [];
  // node-forge decodes RSA keys; other keys (EC) come back as the undecoded PrivateKeyInfo
  const keyBag = keyBags.find((b) => b.key || b.asn1);
  if (!keyBag) throw badIdentity('The PKCS#12 file holds no private key.');
  const keyDer = keyBag.key
    ? fromLatin1(forge.asn1.toDer(forge.pki.wrapRsaPrivateKey(forge.pki.privateKeyToAsn1(keyBag.key))).getBytes())
    : fromLatin1(forge.asn1.toDer(keyBag.asn1!).getBytes());
  const certs = certBags.filter((b) => b.cert).map((b) =>
    parseCertificate(fromLatin1(forge.asn1.toDer(forge.pki.certificateToAsn1(b.cert!)).getBytes()))
  );
  if (!certs.length) throw badIdentity('The PKCS#12 file holds no certificate.');
  return assemble(
    keyDer,
    certs,
    keyBag.attributes?.localKeyId?.[0] as string | undefined,
    certBags.map((b) => b.attributes?.localKeyId?.[0] as string | undefined),
  );
}

/** Reads a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC) and a PEM chain (signer first or anywhere). */
export async function identityFromPem(keyPem: string, chainPem: string): Promise<SigningIdentity> {
  const blocks = pemBlocks(keyPem, ['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY', 'ENCRYPTED PRIVATE KEY']);
  if (!blocks.length) throw badIdentity('key: no PEM private key found (-----BEGIN PRIVATE KEY-----).');
  const b = blocks[0]!;
  if (b.label === 'ENCRYPTED PRIVATE KEY') {
    throw badIdentity('key: encrypted PEM keys are not read; pass a PKCS#12 with its password, or an unencrypted key.');
  }
  let pkcs8 = b.der;
  if (b.label === 'RSA PRIVATE KEY') pkcs8 = wrapPkcs8(b.der, '1.2.840.113549.1.1.1', new asn1js.Null());
  if (b.label === 'EC PRIVATE KEY') pkcs8 = ecToPkcs8(b.der);
  return assemble(pkcs8, parseCertificates(chainPem, 'chain'));
}

function wrapPkcs8(inner: Uint8Array, oid: string, params: asn1js.AsnType): Uint8Array {
  const seq = new asn1js.Sequence({
    value: [
      new asn1js.Integer({ value: 0 }),
      new asn1js.Sequence({ value: [new asn1js.ObjectIdentifier({ value: oid }), params] }),
      new asn1js.OctetString({ valueHex: ab(inner) }),
    ],
  });
  return new Uint8Array(seq.toBER());
}

/** SEC1 ECPrivateKey → PKCS#8 (the curve comes from its parameters field). */
function ecToPkcs8(der: Uint8Array): Uint8Array {
  const parsed = asn1js.fromBER(ab(der));
  const seq = parsed.result as asn1js.Sequence;
  const params = seq.valueBlock.value.find((x) => x.idBlock.tagClass === 3 && x.idBlock.tagNumber === 0) as asn1js.Constructed | undefined;
  const curve = params?.valueBlock.value[0] as asn1js.ObjectIdentifier | undefined;
  if (!curve) throw badIdentity('key: the EC key names no curve.');
  return wrapPkcs8(der, '1.2.840.10045.2.1', new asn1js.ObjectIdentifier({ value: curve.valueBlock.toString() }));
}

const CURVES: Record<string, { name: string; hash: SigningIdentity['hash'] }> = {
  '1.2.840.10045.3.1.7': { name: 'P-256', hash: 'SHA-256' },
  '1.3.132.0.34': { name: 'P-384', hash: 'SHA-384' },
  '1.3.132.0.35': { name: 'P-521', hash: 'SHA-512' },
};

async function assemble(
  pkcs8: Uint8Array,
  certs: pkijs.Certificate[],
  keyId?: string,
  certKeyIds: (string | undefined)[] = [],
): Promise<SigningIdentity> {
  const info = pkijs.PrivateKeyInfo.fromBER(ab(pkcs8));
  const alg = info.privateKeyAlgorithm.algorithmId;
  let key: CryptoKey;
  let kind: SigningIdentity['kind'];
  let hash: SigningIdentity['hash'] = 'SHA-256';
  try {
    if (alg === '1.2.840.113549.1.1.1') {
      kind = 'RSA';
      key = await crypto.subtle.importKey('pkcs8', ab(pkcs8), { name: 'RSASSA-PKCS1-v1_5', hash }, false, ['sign']);
    } else if (alg === '1.2.840.10045.2.1') {
      kind = 'ECDSA';
      const curveOid = (info.privateKeyAlgorithm.algorithmParams as asn1js.ObjectIdentifier | undefined)?.valueBlock?.toString() ?? '';
      const curve = CURVES[curveOid];
      if (!curve) throw badIdentity(`key: unsupported EC curve ${curveOid} (P-256, P-384, P-521).`);
      hash = curve.hash;
      key = await crypto.subtle.importKey('pkcs8', ab(pkcs8), { name: 'ECDSA', namedCurve: curve.name }, false, ['sign']);
    } else throw badIdentity(`key: unsupported key algorithm ${alg} (RSA or EC).`);
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw badIdentity(`key: the private key could not be read: ${(e as Error).message}`);
  }
  // the signer's certificate: the one whose public key matches the private key (by localKeyId, else by key)
  let idx = keyId ? certKeyIds.indexOf(keyId) : -1;
  if (idx < 0) idx = await matchingCert(pkcs8, certs, kind);
  if (idx < 0) throw badIdentity('No certificate given matches the private key.');
  const cert = certs[idx]!;
  return { key, cert, chain: certs.filter((_, i) => i !== idx), kind, hash };
}

/** Index of the certificate whose public key is the private key's (compared through a test signature). */
async function matchingCert(pkcs8: Uint8Array, certs: pkijs.Certificate[], kind: SigningIdentity['kind']): Promise<number> {
  const data = new Uint8Array([1, 2, 3]);
  const alg = kind === 'RSA' ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } : { name: 'ECDSA', hash: 'SHA-256' };
  const info = pkijs.PrivateKeyInfo.fromBER(ab(pkcs8));
  const namedCurve = kind === 'ECDSA'
    ? CURVES[(info.privateKeyAlgorithm.algorithmParams as asn1js.ObjectIdentifier).valueBlock.toString()]!.name
    : undefined;
  const signKey = await crypto.subtle.importKey('pkcs8', ab(pkcs8), kind === 'RSA' ? alg : { name: 'ECDSA', namedCurve }, false, ['sign']);
  const sig = await crypto.subtle.sign(alg, signKey, data);
  for (let i = 0; i < certs.length; i++) {
    // a certificate of another key type does not import: not this one
    const matches = await verifies(async () => {
      const spki = certs[i]!.subjectPublicKeyInfo.toSchema().toBER();
      const pub = await crypto.subtle.importKey('spki', spki, kind === 'RSA' ? alg : { name: 'ECDSA', namedCurve }, false, ['verify']);
      return crypto.subtle.verify(alg, pub, sig, data);
    });
    if (matches) return i;
  }
  return -1;
}

export const certSubject = (c: pkijs.Certificate) => rdn(c.subject);
export const certIssuer = (c: pkijs.Certificate) => rdn(c.issuer);
const NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '1.2.840.113549.1.9.1': 'emailAddress',
  '2.5.4.5': 'serialNumber',
};
function rdn(n: pkijs.RelativeDistinguishedNames): string {
  return n.typesAndValues.map((tv) => `${NAMES[tv.type] ?? tv.type}=${(tv.value.valueBlock as { value?: string }).value ?? ''}`).join(', ');
}
export const commonName = (c: pkijs.Certificate) =>
  ((c.subject.typesAndValues.find((t) => t.type === '2.5.4.3')?.value.valueBlock as { value?: string } | undefined)?.value) ??
    certSubject(c);
export const serialHex = (c: pkijs.Certificate) =>
  [...new Uint8Array(c.serialNumber.valueBlock.valueHexView)].map((x) => x.toString(16).padStart(2, '0')).join('');
