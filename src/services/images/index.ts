/** The image services (docs/api/images.md); loaded on first use through ./lazy.ts. */
export { type ConvertOptions, type ConvertResult, imageConvert } from './convert.ts';
export { imageWatermark } from './image-watermark.ts';
export { imageCapabilities } from './capabilities.ts';
export { imageWatermarkCapabilities } from './watermark.ts';
export { decodeForLogo } from './logo.ts';
export { imageAnalysis } from './analysis.ts';
export { imageColorPalette } from './palette.ts';
export { imageEnhance } from './enhance.ts';
export { imageDeskew } from './deskew.ts';
export { imageNormalization } from './normalize.ts';
export { imageRedact } from './redact.ts';
export { imageBackgroundRemoval } from './background.ts';
