/** The PDF toolkit as HTTP-free services; routes call these and map ServiceError to envelopes. */
export { type PageInfo, type PdfInfo, pdfInfo } from './pdf-info.ts';
export { type LayoutImage, type LayoutLine, type LayoutPage, type LayoutWord, pdfLayout } from './pdf-layout.ts';
export { type MergeInput, type MergeOptions, pdfMerge } from './pdf-merge.ts';
export { pdfSplit, type SplitOptions } from './pdf-split.ts';
export { type EditOperation, pdfEdit } from './pdf-edit.ts';
export { pdfUnlock, type UnlockResult } from './pdf-unlock.ts';
export { pdfRedact, type RedactOptions, type RedactResult } from './pdf-redact.ts';
export { type PageImage, pdfToImages, type ToImagesOptions } from './pdf-to-images.ts';
export { pdfSearch, type SearchMatch, type SearchOptions } from './pdf-search.ts';
export { pdfWatermark, watermarkCapabilities, type WatermarkOptions } from './pdf-watermark.ts';
export { pdfRemoveWatermark } from './pdf-remove-watermark.ts';
export { imageToPdf, type ImageToPdfOptions } from './image-to-pdf.ts';
export { type PdfaCheck, pdfaCheck, type PdfaLevel, pdfToPdfa } from './pdfa.ts';
export { pdfOcr, type PdfOcrOptions } from './pdf-ocr.ts';
export { numberedNames, zipFiles } from './zip.ts';
export { isPdf } from './open.ts';
export type { Box } from './page-frame.ts';
