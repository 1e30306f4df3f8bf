/**
 * The image services, loaded on first use: the codecs, fontkit and Little CMS are not paid for by a
 * server that never touches an image. Same signatures as ./index.ts.
 */
import { lazyModule } from '../lazy-module.ts';

const lazy = lazyModule(() => import('./index.ts'));

export const imageConvert = lazy('imageConvert');
export const imageWatermark = lazy('imageWatermark');
export const imageCapabilities = lazy('imageCapabilities');
export const imageWatermarkCapabilities = lazy('imageWatermarkCapabilities');
export const decodeForLogo = lazy('decodeForLogo');
export type { ConvertOptions, ConvertResult } from './index.ts';
export const imageAnalysis = lazy('imageAnalysis');
export const imageColorPalette = lazy('imageColorPalette');
export const imageEnhance = lazy('imageEnhance');
export const imageDeskew = lazy('imageDeskew');
export const imageNormalization = lazy('imageNormalization');
export const imageRedact = lazy('imageRedact');
export const imageBackgroundRemoval = lazy('imageBackgroundRemoval');
