/**
 * The trust services loaded on first use (pkijs, node-forge and pdf-lib stay out of start-up).
 * Same signatures as ./index.ts.
 */
import { lazyModule } from '../../lazy-module.ts';

const lazy = lazyModule(() => import('./index.ts'));

export const pdfSign = lazy('pdfSign');
export const pdfVerify = lazy('pdfVerify');
export const pdfTimestamp = lazy('pdfTimestamp');
export const pdfLtv = lazy('pdfLtv');
export const identityFromPem = lazy('identityFromPem');
export const identityFromPkcs12 = lazy('identityFromPkcs12');
export const parseCertificates = lazy('parseCertificates');
export { trustNet } from './net.ts';
