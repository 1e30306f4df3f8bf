/**
 * The document services that pull in heavy libraries (PDF layout, mammoth, exceljs, turndown, OCR),
 * loaded on first use so start-up stays fast. Same signatures as their modules.
 */
type Analyse = typeof import('./analyse.ts');
type Highlight = typeof import('./highlight.ts');
type Thumbnails = typeof import('./thumbnails.ts');
type Validate = typeof import('./validate.ts');

let analyse: Promise<Analyse> | undefined;
let highlight: Promise<Highlight> | undefined;
let thumbnails: Promise<Thumbnails> | undefined;
let validate: Promise<Validate> | undefined;

export const analyseBytes: Analyse['analyseBytes'] = async (...a) => (await (analyse ??= import('./analyse.ts'))).analyseBytes(...a);
export const highlightDocument: Highlight['highlightDocument'] = async (...a) =>
  (await (highlight ??= import('./highlight.ts'))).highlightDocument(...a);
export const documentThumbnails: Thumbnails['documentThumbnails'] = async (...a) =>
  (await (thumbnails ??= import('./thumbnails.ts'))).documentThumbnails(...a);
export const validateDocument: Validate['validateDocument'] = async (...a) =>
  (await (validate ??= import('./validate.ts'))).validateDocument(...a);
