/** PDF trust services: sign, verify, document timestamp, LTV. HTTP-free; routes call these. */
export { type Appearance, type PadesLevel, pdfSign, type SignOptions, type SignResult } from './pdf-sign.ts';
export { pdfVerify, type VerifyOptions, type VerifyResult } from './pdf-verify.ts';
export { pdfTimestamp, type TimestampOptions } from './pdf-timestamp.ts';
export { type LtvOptions, pdfLtv } from './pdf-ltv.ts';
export { identityFromPem, identityFromPkcs12, parseCertificates, type SigningIdentity } from './identity.ts';
export { type TrustNet, trustNet } from './net.ts';
