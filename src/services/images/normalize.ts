/**
 * imageNormalization: an image made ready for OCR and ML pipelines: upright (EXIF orientation applied,
 * optionally deskewed), sRGB or gray, at most `maxSide` pixels on its longer side, in one format
 * (PNG by default), metadata stripped.
 */
import { invalidArgument } from '../errors.ts';
import type { OutputFormat } from './codecs.ts';
import { deskewRgba } from './deskew.ts';
import { loadPage, type PageOptions } from './load.ts';
import { writeOutput } from './output.ts';
import { fitSize, resize, toGrayRgba } from './pixels.ts';

export interface NormalizeOptions extends PageOptions {
  maxSide?: number;
  colourSpace?: 'srgb' | 'gray';
  format?: OutputFormat;
  deskew?: boolean;
}

export async function imageNormalization(bytes: Uint8Array, o: NormalizeOptions) {
  const maxSide = o.maxSide ?? 2048;
  if (!(Number.isInteger(maxSide) && maxSide >= 16 && maxSide <= 100_000)) throw invalidArgument('max_side: 16 to 100000 pixels.');
  const page = await loadPage(bytes, o);
  let img = page.img;
  let deskewAngle = 0;
  if (o.deskew) {
    const r = await deskewRgba(img, {});
    img = r.img;
    deskewAngle = r.deskew;
  }
  const size = fitSize(img.width, img.height, { width: maxSide, height: maxSide }, 'inside', false);
  img = await resize(img, size.width, size.height, o.engine);
  const gray = o.colourSpace === 'gray';
  if (gray) img = toGrayRgba(img);
  const out = await writeOutput(img, page.format, { format: o.format ?? 'png', gray, engine: o.engine });
  return { ...out, pageIndex: page.pageIndex, deskewAngle };
}
