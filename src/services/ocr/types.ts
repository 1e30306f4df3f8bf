/** OCR results: boxes in pixels of the corrected (upright, deskewed) page image, origin top-left. */
import type { Gray } from './raster.ts';

export interface PixelBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface OcrWord {
  text: string;
  box: PixelBox;
  confidence: number;
}
export interface OcrLine {
  text: string;
  box: PixelBox;
  confidence: number;
  words: OcrWord[];
  /** estimated font size in pixels (from the x-height measured in the image) */
  font_size?: number;
  /** strokes thick for their size */
  bold?: boolean;
}

export type OcrEngineName = 'tesseract' | 'paddle';

/** What an engine returns for one upright image. */
export interface EngineResult {
  lines: OcrLine[];
}

export interface OcrEngine {
  name: OcrEngineName;
  recognize(image: Gray, signal?: AbortSignal): Promise<EngineResult>;
}

export interface OcrPage {
  /** 1-based page (PDF page, TIFF frame) */
  page: number;
  engine: OcrEngineName;
  /** size of the corrected image the boxes refer to */
  width: number;
  height: number;
  /** clockwise rotation applied to make the page upright */
  rotation: 0 | 90 | 180 | 270;
  /** further clockwise rotation applied to level the lines, degrees */
  deskew: number;
  text: string;
  /** mean word confidence, 0..1 */
  confidence: number;
  lines: OcrLine[];
}
