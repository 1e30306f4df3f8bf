/**
 * imageEnhance: auto-levels, contrast, denoise and sharpen with photon (Rust compiled to WASM), in that
 * order. auto_levels stretches each channel to the full range (photon's normalize), as ImageMagick's
 * -normalize / -contrast-stretch 0 do.
 */
import { invalidArgument } from '../errors.ts';
import type { Rgba } from './codecs.ts';
import { loadPage } from './load.ts';
import { type UtilityOutputOptions, writeOutput } from './output.ts';

export interface EnhanceOptions extends UtilityOutputOptions {
  autoLevels?: boolean;
  /** -100..100 (0 = unchanged) */
  contrast?: number;
  /** median filter radius 1..3 (0 = off) */
  denoise?: number;
  /** unsharp-mask amount 0..150 (0 = off) */
  sharpen?: number;
}

export async function enhanceRgba(
  img: Rgba,
  o: Omit<EnhanceOptions, keyof UtilityOutputOptions>,
): Promise<Rgba> {
  const photon = await import('@cf-wasm/photon');
  const p = new photon.PhotonImage(new Uint8Array(img.data), img.width, img.height);
  try {
    if (o.autoLevels ?? true) photon.normalize(p);
    if (o.contrast) photon.adjust_contrast(p, o.contrast * 2.55);
    if (o.denoise) photon.apply_noise_reduction_median(p, o.denoise);
    if (o.sharpen) photon.apply_sharpening(p, o.sharpen, 1, 2, 0);
    return { data: new Uint8ClampedArray(p.get_raw_pixels()), width: img.width, height: img.height };
  } finally {
    p.free();
  }
}

export async function imageEnhance(bytes: Uint8Array, o: EnhanceOptions) {
  if (o.contrast !== undefined && !(o.contrast >= -100 && o.contrast <= 100)) throw invalidArgument('contrast: -100 to 100.');
  if (o.denoise !== undefined && !(Number.isInteger(o.denoise) && o.denoise >= 0 && o.denoise <= 3)) {
    throw invalidArgument('denoise: a median radius 0 to 3.');
  }
  if (o.sharpen !== undefined && !(o.sharpen >= 0 && o.sharpen <= 150)) throw invalidArgument('sharpen: 0 to 150.');
  const page = await loadPage(bytes, o);
  const out = await enhanceRgba(page.img, o);
  return { ...(await writeOutput(out, page.format, o)), pageIndex: page.pageIndex };
}
