/** PDF trust services: sign, verify, document timestamp, LTV. HTTP-free; routes call these. */
export { pdfSign, type SignOptions, type SignResult, type PadesLevel, type Appearance } from './pdf-sign.ts';
export { pdfVerify, type VerifyOptions, type VerifyResult } from './pdf-verify.ts';
export { pdfTimestamp, type TimestampOptions } from './pdf-timestamp.ts';
export { pdfLtv, type LtvOptions } from './pdf-ltv.ts';
export { identityFromPem, identityFromPkcs12, parseCertificates, type SigningIdentity } from './identity.ts';
export { trustNet, type TrustNet } from './net.ts';
