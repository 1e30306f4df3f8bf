/**
 * The trust services loaded on first use (pkijs, node-forge and pdf-lib stay out of start-up).
 * Same signatures as ./index.ts.
 */
type Trust = typeof import('./index.ts');
type Fn<K extends keyof Trust> = Trust[K] extends (...a: infer A) => infer R ? (...a: A) => Promise<Awaited<R>> : never;

let loading: Promise<Trust> | undefined;
const load = () => (loading ??= import('./index.ts'));
const lazy = <K extends keyof Trust>(name: K): Fn<K> =>
  (async (...args: unknown[]) => ((await load())[name] as (...a: unknown[]) => unknown)(...args)) as Fn<K>;

export const pdfSign = lazy('pdfSign');
export const pdfVerify = lazy('pdfVerify');
export const pdfTimestamp = lazy('pdfTimestamp');
export const pdfLtv = lazy('pdfLtv');
export const identityFromPem = lazy('identityFromPem');
export const identityFromPkcs12 = lazy('identityFromPkcs12');
export const parseCertificates = lazy('parseCertificates');
export { trustNet } from './net.ts';
