/**
 * Colour management with Little CMS compiled to WASM (lcms-wasm): sRGB -> CMYK through the shipped CMYK
 * profile, and an input's embedded RGB profile -> sRGB on the WASM decode path (sharp does that natively).
 * Shipped profiles (see scripts/images/make-cmyk-profile.sh and docs/api/images.md):
 *  - profiles/cmyk-fogra39.icc: built with ArgyllCMS from FOGRA39L.ti3 (icc-profiles-free, Zlib licence);
 *  - profiles/srgb.icc: icc-profiles-free's sRGB (Zlib licence).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { packageFile } from '../../runtime/assets.ts';
import { embeddedAssets } from '../../runtime/embedded.ts';
import type { Rgba } from './codecs.ts';

// deno-lint-ignore no-explicit-any
type Lcms = any;

const TYPE_RGB_8 = 0x40019; // COLORSPACE_SH(PT_RGB=4)|CHANNELS_SH(3)|BYTES_SH(1)
const TYPE_CMYK_8 = 0x60021; // COLORSPACE_SH(PT_CMYK=6)|CHANNELS_SH(4)|BYTES_SH(1)
const TYPE_Lab_FLT = 0x4a001c; // FLOAT_SH(1)|COLORSPACE_SH(PT_Lab=10)|CHANNELS_SH(3)|BYTES_SH(4)
const INTENT_RELATIVE_COLORIMETRIC = 1;
const cmsFLAGS_BLACKPOINTCOMPENSATION = 0x2000;

let lcms: Promise<Lcms> | undefined;
function engine(): Promise<Lcms> {
  return (lcms ??= (async () => {
    const wasmBinary = await readFile(packageFile('lcms-wasm/dist/lcms.wasm'));
    const { instantiate } = await import('lcms-wasm');
    return instantiate({ wasmBinary });
  })());
}

/** A shipped profile: embedded in the single binary (scripts/compile.mjs), else read beside this module. */
export const profileFile = (name: string) =>
  embeddedAssets[`./src/services/images/profiles/${name}`] ?? fileURLToPath(new URL(`./profiles/${name}`, import.meta.url));
let cmykBytes: Promise<Uint8Array> | undefined;
/** The shipped CMYK output profile (embedded into every CMYK image written). */
export const cmykProfile = () => (cmykBytes ??= readFile(profileFile('cmyk-fogra39.icc')).then((b) => new Uint8Array(b)));
export const cmykProfilePath = () => profileFile('cmyk-fogra39.icc');
export const CMYK_PROFILE_NAME = 'svc CMYK (FOGRA39L characterization, Argyll colprof)';

function rgbOf(img: Rgba, background = 255): Uint8Array {
  const n = img.width * img.height;
  const out = new Uint8Array(n * 3);
  const d = img.data;
  for (let i = 0, j = 0; i < n * 4; i += 4, j += 3) {
    const a = d[i + 3]! / 255;
    out[j] = d[i]! * a + background * (1 - a);
    out[j + 1] = d[i + 1]! * a + background * (1 - a);
    out[j + 2] = d[i + 2]! * a + background * (1 - a);
  }
  return out;
}

/** CMYK bytes (4 per pixel, 0 = no ink) of an sRGB image flattened on white, through the shipped profile. */
export async function srgbToCmyk(img: Rgba): Promise<Uint8Array> {
  const m = await engine();
  const src = m.cmsCreate_sRGBProfile();
  const icc = await cmykProfile();
  const dst = m.cmsOpenProfileFromMem(icc, icc.byteLength);
  const t = m.cmsCreateTransform(src, TYPE_RGB_8, dst, TYPE_CMYK_8, INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_BLACKPOINTCOMPENSATION);
  try {
    return chunked(m, t, rgbOf(img), 3, 4, img.width * img.height);
  } finally {
    m.cmsDeleteTransform(t);
    m.cmsCloseProfile(src);
    m.cmsCloseProfile(dst);
  }
}

/** sRGB RGBA of CMYK samples (0 = no ink), through their own profile or, without one, the shipped CMYK profile. */
export async function cmykToSrgb(cmyk: Uint8Array, width: number, height: number, icc?: Uint8Array): Promise<Rgba> {
  const m = await engine();
  const prof = icc ?? (await cmykProfile());
  let src = m.cmsOpenProfileFromMem(prof, prof.byteLength);
  if (!src || m.cmsGetColorSpaceASCII(src) !== 'CMYK') {
    if (src) m.cmsCloseProfile(src);
    const own = await cmykProfile();
    src = m.cmsOpenProfileFromMem(own, own.byteLength);
  }
  const dst = m.cmsCreate_sRGBProfile();
  const t = m.cmsCreateTransform(src, TYPE_CMYK_8, dst, TYPE_RGB_8, INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_BLACKPOINTCOMPENSATION);
  try {
    const n = width * height;
    const rgb = chunked(m, t, cmyk, 4, 3, n);
    const data = new Uint8ClampedArray(n * 4);
    for (let i = 0, j = 0; i < n; i++, j += 3) {
      data[i * 4] = rgb[j]!;
      data[i * 4 + 1] = rgb[j + 1]!;
      data[i * 4 + 2] = rgb[j + 2]!;
      data[i * 4 + 3] = 255;
    }
    return { data, width, height };
  } finally {
    m.cmsDeleteTransform(t);
    m.cmsCloseProfile(src);
    m.cmsCloseProfile(dst);
  }
}

/** Converts pixels described by an embedded RGB profile to sRGB; other profiles leave the pixels as they are. */
export async function iccToSrgb(img: Rgba, icc: Uint8Array): Promise<Rgba> {
  const m = await engine();
  const src = m.cmsOpenProfileFromMem(icc, icc.byteLength);
  if (!src) return img;
  try {
    if (m.cmsGetColorSpaceASCII(src) !== 'RGB') return img;
    const dst = m.cmsCreate_sRGBProfile();
    const t = m.cmsCreateTransform(src, TYPE_RGB_8, dst, TYPE_RGB_8, INTENT_RELATIVE_COLORIMETRIC, 0);
    try {
      if (!t) return img;
      const n = img.width * img.height;
      const rgb = chunked(m, t, rgbOf(img, 0), 3, 3, n);
      const out = new Uint8ClampedArray(img.data);
      for (let i = 0, j = 0; i < n; i++, j += 3) {
        out[i * 4] = rgb[j]!;
        out[i * 4 + 1] = rgb[j + 1]!;
        out[i * 4 + 2] = rgb[j + 2]!;
      }
      return { data: out, width: img.width, height: img.height };
    } finally {
      if (t) m.cmsDeleteTransform(t);
      m.cmsCloseProfile(dst);
    }
  } finally {
    m.cmsCloseProfile(src);
  }
}

/** CIE L*a*b* (D50) of sRGB colours, for colour statistics. */
export async function srgbToLab(rgb: Uint8Array): Promise<Float32Array> {
  const m = await engine();
  const src = m.cmsCreate_sRGBProfile();
  const lab = m.cmsCreateLab4Profile(null);
  const t = m.cmsCreateTransform(src, TYPE_RGB_8, lab, TYPE_Lab_FLT, INTENT_RELATIVE_COLORIMETRIC, 0);
  try {
    return m.cmsDoTransform(t, rgb, rgb.length / 3);
  } finally {
    m.cmsDeleteTransform(t);
    m.cmsCloseProfile(src);
    m.cmsCloseProfile(lab);
  }
}

/** cmsDoTransform in slices, so the WASM heap never holds a whole large image twice. */
function chunked(m: Lcms, t: number, input: Uint8Array, inCh: number, outCh: number, n: number): Uint8Array {
  const out = new Uint8Array(n * outCh);
  const step = 1 << 18;
  for (let p = 0; p < n; p += step) {
    const k = Math.min(step, n - p);
    out.set((m.cmsDoTransform(t, input.subarray(p * inCh, (p + k) * inCh), k) as Uint8Array).subarray(0, k * outCh), p * outCh);
  }
  return out;
}
