/**
 * The PDF services, loaded on first use: pdf-lib, pdf.js, PDFium and fontkit weigh about 20 MB of heap and
 * most of the start-up time, which a server that never touches a PDF should not pay.
 * Same signatures as ./index.ts; the light helpers (zip) stay eager.
 */
import { lazyModule } from '../lazy-module.ts';

const lazy = lazyModule(() => import('./index.ts'));

export const pdfInfo = lazy('pdfInfo');
export const pdfLayout = lazy('pdfLayout');
export const pdfMerge = lazy('pdfMerge');
export const pdfSplit = lazy('pdfSplit');
export const pdfEdit = lazy('pdfEdit');
export const pdfUnlock = lazy('pdfUnlock');
export const pdfRedact = lazy('pdfRedact');
export const pdfToImages = lazy('pdfToImages');
export const pdfSearch = lazy('pdfSearch');
export const pdfWatermark = lazy('pdfWatermark');
export const watermarkCapabilities = lazy('watermarkCapabilities');
export const pdfRemoveWatermark = lazy('pdfRemoveWatermark');
export const imageToPdf = lazy('imageToPdf');
export const pdfToPdfa = lazy('pdfToPdfa');
export const pdfaCheck = lazy('pdfaCheck');
export const pdfOcr = lazy('pdfOcr');
export { numberedNames, zipFiles } from './zip.ts';
export type { EditOperation, ImageToPdfOptions, SplitOptions } from './index.ts';
