/**
 * imageDeskew: the OCR pipeline's orientation and skew measure (projection profiles, src/services/ocr/
 * orient.ts) run on the gray image, then the colour image turned by the same angles, the new corners
 * filled with the background colour.
 */
import { orientPage } from '../ocr/orient.ts';
import type { Rgba } from './codecs.ts';
import { loadPage } from './load.ts';
import { type UtilityOutputOptions, writeOutput } from './output.ts';
import { grayOf, rotate } from './pixels.ts';
import { parseColor } from './watermark.ts';

export async function deskewRgba(img: Rgba, o: { detectOrientation?: boolean; background?: string }) {
  const o2 = await orientPage({ data: grayOf(img), width: img.width, height: img.height }, {
    detectOrientation: o.detectOrientation ?? false,
    deskew: true,
  });
  const fill = [...parseColor(o.background ?? '#ffffff'), 255] as [number, number, number, number];
  let out = o2.rotation ? rotate(img, o2.rotation, fill) : img;
  if (o2.deskew) out = rotate(out, o2.deskew, fill);
  return { img: out, rotation: o2.rotation, deskew: o2.deskew };
}

export async function imageDeskew(
  bytes: Uint8Array,
  o: UtilityOutputOptions & { detectOrientation?: boolean; background?: string },
) {
  const page = await loadPage(bytes, o);
  const r = await deskewRgba(page.img, o);
  return { ...(await writeOutput(r.img, page.format, o)), pageIndex: page.pageIndex, rotation: r.rotation, deskewAngle: r.deskew };
}
