/** OCR loaded on first use (tesseract.js, the paddle pipeline, PDF rendering): start-up stays fast. */
type Ocr = typeof import('./ocr.ts');
let loading: Promise<Ocr> | undefined;

export const ocrDocument: Ocr['ocrDocument'] = async (...a) => (await (loading ??= import('./ocr.ts'))).ocrDocument(...a);
