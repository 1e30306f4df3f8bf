/** The PDF toolkit as HTTP-free services; routes call these and map ServiceError to envelopes. */
export { pdfInfo, type PdfInfo, type PageInfo } from './pdf-info.ts';
export { pdfLayout, type LayoutPage, type LayoutLine, type LayoutWord, type LayoutImage } from './pdf-layout.ts';
export { pdfMerge, type MergeInput, type MergeOptions } from './pdf-merge.ts';
export { pdfSplit, type SplitOptions } from './pdf-split.ts';
export { pdfEdit, type EditOperation } from './pdf-edit.ts';
export { pdfUnlock, type UnlockResult } from './pdf-unlock.ts';
export { pdfRedact, type RedactOptions, type RedactResult } from './pdf-redact.ts';
export { pdfToImages, type ToImagesOptions, type PageImage } from './pdf-to-images.ts';
export { pdfSearch, type SearchOptions, type SearchMatch } from './pdf-search.ts';
export { pdfWatermark, watermarkCapabilities, type WatermarkOptions } from './pdf-watermark.ts';
export { pdfRemoveWatermark } from './pdf-remove-watermark.ts';
export { imageToPdf, type ImageToPdfOptions } from './image-to-pdf.ts';
export { pdfToPdfa, pdfaCheck, type PdfaLevel, type PdfaCheck } from './pdfa.ts';
export { pdfOcr, type PdfOcrOptions } from './pdf-ocr.ts';
export { zipFiles, numberedNames } from './zip.ts';
export { isPdf } from './open.ts';
export type { Box } from './page-frame.ts';
