/** OCR loaded on first use (tesseract.js, the paddle pipeline, PDF rendering): start-up stays fast. */
import { lazyModule } from '../lazy-module.ts';

export const ocrDocument = lazyModule(() => import('./ocr.ts'))('ocrDocument');
