/**
 * The document services that pull in heavy libraries (PDF layout, mammoth, exceljs, turndown, OCR),
 * loaded on first use so start-up stays fast. Same signatures as their modules.
 */
import { lazyModule } from '../lazy-module.ts';

export const analyseBytes = lazyModule(() => import('./analyse.ts'))('analyseBytes');
export const highlightDocument = lazyModule(() => import('./highlight.ts'))('highlightDocument');
export const documentThumbnails = lazyModule(() => import('./thumbnails.ts'))('documentThumbnails');
export const validateDocument = lazyModule(() => import('./validate.ts'))('validateDocument');
