/**
 * A text or logo mark burned into pixels: tiled, centered or in a corner, with the PDF watermark's
 * options and defaults in pixel units (docs/api/images.md). Text is drawn with the shipped fonts; a
 * character none of them has is refused with 422 unsupported_characters, as for PDFs.
 */
import { invalidArgument } from '../errors.ts';
import { checkMark, CORNERS, LAYOUTS, type MarkChoices, MAX_TEXT_LENGTH } from '../pdf/mark-options.ts';
import { drawableRuns, installedFonts, type TextRun } from '../pdf/fonts.ts';
import type { Engine, Rgba } from './codecs.ts';
import { resize, rotate } from './pixels.ts';
import { type Mask, textMask } from './text-raster.ts';

export { CORNERS, LAYOUTS, MAX_TEXT_LENGTH, parseColor } from '../pdf/mark-options.ts';

export interface ImageWatermark extends MarkChoices {
  /** the logo, decoded */
  logo?: Rgba;
  /** pixels; default a fifteenth of the shorter side (corner: a fortieth), at least 10 */
  fontSize?: number;
  /** logo width in pixels; default a quarter of the image width (corner: an eighth) */
  logoWidth?: number;
}

/** Checks the options and the text's characters before any pixel is touched. */
export async function prepareWatermark(w: ImageWatermark) {
  const shared = checkMark(w, !!w.logo, 'watermark ');
  if (w.fontSize !== undefined && !(w.fontSize >= 4 && w.fontSize <= 2000)) throw invalidArgument('watermark font_size: 4 to 2000 pixels.');
  if (w.logoWidth !== undefined && !(w.logoWidth >= 1 && w.logoWidth <= 20000)) {
    throw invalidArgument('watermark logo_width: 1 to 20000 pixels.');
  }
  const runs: TextRun[] = w.text ? await drawableRuns(w.text) : [];
  return { ...w, ...shared, runs };
}

export type PreparedWatermark = Awaited<ReturnType<typeof prepareWatermark>>;

const MARGIN_SHARE = 0.02;

/** Burns the mark into a copy of the image; size and alpha of the image are unchanged. */
export async function burnWatermark(img: Rgba, w: PreparedWatermark, engine: Engine = 'auto'): Promise<Rgba> {
  const short = Math.min(img.width, img.height);
  let stamp: Rgba;
  if (w.logo) {
    const lw = Math.max(1, Math.round(w.logoWidth ?? img.width / (w.layout === 'corner' ? 8 : 4)));
    const lh = Math.max(1, Math.round((lw * w.logo.height) / w.logo.width));
    stamp = rotate(await resize(w.logo, lw, lh, engine), -w.rotation, [0, 0, 0, 0]);
  } else {
    const size = w.fontSize ?? Math.max(10, Math.round(short / (w.layout === 'corner' ? 40 : 15)));
    stamp = colourMask(textMask(w.runs, size, w.rotation), w.color);
  }
  const out: Rgba = { data: new Uint8ClampedArray(img.data), width: img.width, height: img.height };
  const margin = Math.round(short * MARGIN_SHARE) + 4;
  const centres: [number, number][] = [];
  if (w.layout === 'centered') centres.push([img.width / 2, img.height / 2]);
  else if (w.layout === 'corner') {
    const x = w.corner.endsWith('left') ? margin + stamp.width / 2 : img.width - margin - stamp.width / 2;
    const y = w.corner.startsWith('top') ? margin + stamp.height / 2 : img.height - margin - stamp.height / 2;
    centres.push([x, y]);
  } else {
    const stepX = stamp.width + Math.max(20, stamp.width * 0.4), stepY = stamp.height + Math.max(20, stamp.height * 0.6);
    let row = 0;
    for (let y = stepY / 2; y < img.height + stepY; y += stepY, row++) {
      for (let x = row % 2 ? stepX / 2 : 0; x < img.width + stepX; x += stepX) centres.push([x, y]);
    }
  }
  for (const [cx, cy] of centres) stampAt(out, stamp, Math.round(cx - stamp.width / 2), Math.round(cy - stamp.height / 2), w.opacity);
  return out;
}

function colourMask(m: Mask, [r, g, b]: [number, number, number]): Rgba {
  const data = new Uint8ClampedArray(m.width * m.height * 4);
  for (let i = 0; i < m.data.length; i++) {
    data[i * 4] = r;
    data[i * 4 + 1] = g;
    data[i * 4 + 2] = b;
    data[i * 4 + 3] = m.data[i]!;
  }
  return { data, width: m.width, height: m.height };
}

/** Source-over blend of `s` at (x0, y0), its alpha scaled by `opacity`; the destination's alpha is kept as is. */
function stampAt(dst: Rgba, s: Rgba, x0: number, y0: number, opacity: number) {
  const xa = Math.max(0, x0), ya = Math.max(0, y0), xb = Math.min(dst.width, x0 + s.width), yb = Math.min(dst.height, y0 + s.height);
  for (let y = ya; y < yb; y++) {
    for (let x = xa; x < xb; x++) {
      const si = ((y - y0) * s.width + (x - x0)) * 4;
      const a = (s.data[si + 3]! / 255) * opacity;
      if (a <= 0) continue;
      const di = (y * dst.width + x) * 4;
      for (let k = 0; k < 3; k++) dst.data[di + k] = dst.data[di + k]! * (1 - a) + s.data[si + k]! * a;
    }
  }
}

/** What the image watermark can do, for the capabilities routes. */
export async function imageWatermarkCapabilities() {
  const fonts = await installedFonts();
  return {
    watermark_layouts: LAYOUTS,
    watermark_corners: CORNERS,
    watermark_max_text_length: MAX_TEXT_LENGTH,
    watermark_installed_fonts: fonts.map((f) => ({ family: f.family, scripts: f.scripts })),
    watermark_opacity: { min: 0, exclusive_min: true, max: 1, default: 0.3 },
    watermark_logo_formats: ['image/png', 'image/jpeg', 'image/webp', 'image/avif', 'image/tiff', 'image/gif', 'image/bmp'],
  };
}
