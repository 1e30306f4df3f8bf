/**
 * Image bytes <-> RGBA pixels (8-bit sRGB, upright). Two engines, as for the PDF toolkit: sharp (native
 * libvips) where its addon loads, the WASM codecs (@jsquash, utif2, own BMP) everywhere else. The engine
 * is chosen per call ('auto' = sharp when present), so tests and benchmarks can force either.
 * Embedded ICC profiles are honoured: sharp converts to sRGB itself; on the WASM path lcms-wasm does.
 * TIFF and BMP are written by our own writers on both paths (multi-page TIFF, CMYK TIFF).
 */
import { readFile } from 'node:fs/promises';
import { packageFile } from '../../runtime/assets.ts';
import { loadSharp } from '../../runtime/sharp.ts';
import { capabilityUnavailable, invalidArgument, ServiceError } from '../errors.ts';
import { decodeBmp } from '../ocr/raster.ts';
import { encodeBmp } from './bmp.ts';
import { iccToSrgb } from './icc.ts';
import { type ImageMetadata, readMetadata } from './metadata.ts';
import { applyOrientation } from './pixels.ts';
import type { ImageFormat } from './probe.ts';
import { decodeTiffPages } from './tiff.ts';

export type Engine = 'auto' | 'sharp' | 'wasm';

export interface Rgba {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

// deno-lint-ignore no-explicit-any
type Sharp = any;

export async function sharpFor(engine: Engine): Promise<Sharp | null> {
  if (engine === 'wasm') return null;
  const s = await loadSharp();
  if (!s && engine === 'sharp') throw capabilityUnavailable('sharp (libvips) is not available in this runtime');
  return s;
}

const corrupt = (
  e: unknown,
) => (e instanceof ServiceError ? e : new ServiceError(422, 'image_corrupt', `The image cannot be decoded: ${(e as Error).message}`));

const wasm = (spec: string) => readFile(packageFile(spec)).then((b) => WebAssembly.compile(b));
const once = <T>(f: () => Promise<T>) => {
  let p: Promise<T> | undefined;
  return () => (p ??= f());
};

type Decoder = (b: ArrayBuffer) => Promise<ImageData>;
const wasmDecoders: Partial<Record<ImageFormat, () => Promise<Decoder>>> = {
  png: once(async () => {
    const m = await import('@jsquash/png/decode.js');
    await m.init(await wasm('@jsquash/png/codec/pkg/squoosh_png_bg.wasm'));
    return (b) => m.default(b) as Promise<ImageData>;
  }),
  jpeg: once(async () => {
    const m = await import('@jsquash/jpeg/decode.js');
    await m.init(await wasm('@jsquash/jpeg/codec/dec/mozjpeg_dec.wasm') as never);
    return (b) => m.default(b);
  }),
  webp: once(async () => {
    const m = await import('@jsquash/webp/decode.js');
    await m.init(await wasm('@jsquash/webp/codec/dec/webp_dec.wasm') as never);
    return (b) => m.default(b);
  }),
  avif: once(async () => {
    const m = await import('@jsquash/avif/decode.js');
    await m.init(await wasm('@jsquash/avif/codec/dec/avif_dec.wasm') as never);
    return async (b) => (await m.default(b)) as ImageData;
  }),
};

export interface Decoded {
  /** the pages asked for, each upright and in sRGB */
  pages: Rgba[];
  /** how many pages the input has */
  pageCount: number;
  /** the pages were resized to opts.size while decoding */
  resized?: boolean;
  metadata: ImageMetadata;
}

/**
 * Decodes the chosen pages (0-based; default all) to upright sRGB RGBA. The caller has already checked the
 * declared pixel count (probe.ts), so decoders never meet a bomb.
 */
export async function decodeImage(
  bytes: Uint8Array,
  format: ImageFormat,
  pageCount: number,
  opts: {
    pages?: number[];
    engine?: Engine;
    maxPixels: number;
    size?: (width: number, height: number) => { width: number; height: number };
  },
): Promise<Decoded> {
  const want = opts.pages ?? [...Array(pageCount).keys()];
  for (const p of want) {
    if (p < 0 || p >= pageCount) throw invalidArgument(`page_index ${p} is past the last page (the image has ${pageCount}).`);
  }
  const metadata = await readMetadata(bytes, format);
  const sharp = await sharpFor(opts.engine ?? 'auto');
  // HEVC-coded HEIC: no WASM decoder exists, and sharp's prebuilt libheif reads AVIF only
  if (format === 'heic') throw capabilityUnavailable('HEIC (HEVC) decoding is not available in this build; convert to JPEG or AVIF first');
  try {
    if (sharp && format !== 'bmp') {
      const pages: Rgba[] = [];
      for (const p of want) {
        // autoOrient applies EXIF orientation; the default pipeline converts an embedded profile to sRGB
        let s = sharp(bytes, { page: p, limitInputPixels: opts.maxPixels, failOn: 'error' }).autoOrient();
        if (opts.size) {
          // resizing inside the decode pipeline lets libvips shrink on load (JPEG DCT scaling, WebP)
          const m = await sharp(bytes, { page: p }).metadata();
          const turned = (m.orientation ?? 1) >= 5;
          const t = opts.size(turned ? m.height : m.width, turned ? m.width : m.height);
          s = s.resize(t.width, t.height, { fit: 'fill', kernel: 'lanczos3' });
        }
        const { data, info } = await s.toColourspace('srgb').ensureAlpha().raw().toBuffer({ resolveWithObject: true });
        pages.push({ data: new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height });
      }
      return { pages, pageCount, metadata, resized: !!opts.size };
    }
    let pages: Rgba[];
    if (format === 'tiff') pages = await decodeTiffPages(bytes, want);
    else if (format === 'bmp') pages = [toRgba(decodeBmp(bytes))];
    else {
      // mozjpeg's WASM build aborts on 4-component (CMYK/YCCK) JPEGs
      if (format === 'jpeg' && jpegComponents(bytes) === 4) {
        throw capabilityUnavailable(
          'CMYK JPEG decoding needs the sharp image library, which this build does not carry; send the image as TIFF',
        );
      }
      const dec = wasmDecoders[format];
      if (!dec) {
        throw capabilityUnavailable(`decoding ${format.toUpperCase()} needs the sharp image library, which this build does not carry`);
      }
      const img = await (await dec())(bytes.slice().buffer as ArrayBuffer);
      pages = [{
        data: new Uint8ClampedArray(img.data.buffer, img.data.byteOffset, img.data.byteLength),
        width: img.width,
        height: img.height,
      }];
    }
    if (metadata.icc && format !== 'tiff') pages = await Promise.all(pages.map((p) => iccToSrgb(p, metadata.icc!)));
    if (metadata.orientation > 1) pages = pages.map((p) => applyOrientation(p, metadata.orientation));
    return { pages, pageCount, metadata };
  } catch (e) {
    throw corrupt(e);
  }
}

/** Components in the JPEG frame header (3 = YCbCr, 4 = CMYK/YCCK, 1 = gray). */
function jpegComponents(b: Uint8Array): number {
  for (let i = 2; i + 9 < b.length;) {
    if (b[i] !== 0xff) {
      i++;
      continue;
    }
    const m = b[i + 1]!;
    if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc) return b[i + 9]!;
    if (m === 0xd8 || m === 0xff || m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      i += m === 0xff ? 1 : 2;
      continue;
    }
    i += 2 + ((b[i + 2]! << 8) | b[i + 3]!);
  }
  return 3;
}

const toRgba = (x: { data: Uint8Array; width: number; height: number }): Rgba => ({
  data: new Uint8ClampedArray(x.data.buffer, x.data.byteOffset, x.data.byteLength),
  width: x.width,
  height: x.height,
});

export type OutputFormat = 'jpeg' | 'png' | 'webp' | 'avif' | 'tiff' | 'gif' | 'bmp';
export const OUTPUT_FORMATS: OutputFormat[] = ['jpeg', 'png', 'webp', 'avif', 'tiff', 'gif', 'bmp'];
export const CONTENT_TYPES: Record<OutputFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  avif: 'image/avif',
  tiff: 'image/tiff',
  gif: 'image/gif',
  bmp: 'image/bmp',
};
export const EXTENSIONS: Record<OutputFormat, string> = {
  jpeg: 'jpg',
  png: 'png',
  webp: 'webp',
  avif: 'avif',
  tiff: 'tif',
  gif: 'gif',
  bmp: 'bmp',
};

type Encoder = (d: ImageData, o: object) => Promise<ArrayBuffer>;
const wasmEncoders: Partial<Record<OutputFormat, () => Promise<Encoder>>> = {
  png: once(async () => {
    const m = await import('@jsquash/png/encode.js');
    await m.init(await wasm('@jsquash/png/codec/pkg/squoosh_png_bg.wasm'));
    return (d) => m.default(d);
  }),
  jpeg: once(async () => {
    const m = await import('@jsquash/jpeg/encode.js');
    await m.init(await wasm('@jsquash/jpeg/codec/enc/mozjpeg_enc.wasm') as never);
    return (d, o) => m.default(d, o);
  }),
  webp: once(async () => {
    const m = await import('@jsquash/webp/encode.js');
    await m.init(await wasm('@jsquash/webp/codec/enc/webp_enc_simd.wasm') as never);
    return (d, o) => m.default(d, o);
  }),
  avif: once(async () => {
    const m = await import('@jsquash/avif/encode.js');
    await m.init(await wasm('@jsquash/avif/codec/enc/avif_enc.wasm') as never);
    return (d, o) => m.default(d, o as never);
  }),
};

export interface EncodeOptions {
  quality?: number;
  /** write a one-channel image where the format has one (PNG, JPEG, TIFF, WebP stays RGB) */
  gray?: boolean;
  engine?: Engine;
  /** XMP for formats whose container metadata.ts does not write (AVIF, through sharp) */
  xmp?: Uint8Array;
}

/** Encodes one RGBA page (JPEG drops alpha onto white). Metadata is added afterwards (metadata.ts). */
export async function encodeImage(img: Rgba, format: OutputFormat, opts: EncodeOptions = {}): Promise<Uint8Array> {
  const quality = Math.round(opts.quality ?? (format === 'webp' ? 80 : format === 'avif' ? 50 : 85));
  if (format === 'bmp') return encodeBmp(img);
  const sharp = await sharpFor(opts.engine ?? 'auto');
  if (sharp) {
    let s = sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } });
    if (format !== 'jpeg' && isOpaque(img)) s = s.removeAlpha(); // no alpha channel where every pixel is opaque
    return new Uint8Array(await sharpEncode(s, format, quality, opts).toBuffer());
  }
  const enc = wasmEncoders[format];
  if (!enc) throw capabilityUnavailable(`encoding ${format.toUpperCase()} needs the sharp image library, which this build does not carry`);
  let data = img.data;
  if (format === 'jpeg' || opts.gray) data = flattenForWasm(img, format === 'jpeg', !!opts.gray);
  const out = await (await enc())({ data, width: img.width, height: img.height, colorSpace: 'srgb' } as ImageData, { quality });
  return new Uint8Array(out);
}

export function isOpaque(img: Rgba): boolean {
  const d = img.data;
  for (let i = 3; i < d.length; i += 4) if (d[i] !== 255) return false;
  return true;
}

/** The encoder settings both sharp paths share (raw pixels in, or the one-pipeline transcode). */
function sharpEncode(s: Sharp, format: OutputFormat, quality: number, opts: { gray?: boolean; xmp?: Uint8Array }): Sharp {
  if (format === 'jpeg') s = s.flatten({ background: '#ffffff' });
  if (opts.gray) s = s.toColourspace('b-w');
  if (format === 'avif' && opts.xmp) s = s.withXmp(new TextDecoder().decode(opts.xmp));
  return format === 'png'
    ? s.png({ compressionLevel: 6 })
    : format === 'jpeg'
    ? s.jpeg({ quality })
    : format === 'webp'
    ? s.webp({ quality })
    : format === 'avif'
    ? s.avif({ quality })
    : s.gif();
}

/**
 * One libvips pipeline from input bytes to output bytes (decode, orient, resize, colour, encode), for
 * conversions that need no pixel work of ours: the pixels never cross into JavaScript.
 */
export async function transcodeWithSharp(
  bytes: Uint8Array,
  page: number,
  o: EncodeOptions & {
    format: OutputFormat;
    maxPixels: number;
    size?: (width: number, height: number) => { width: number; height: number };
  },
): Promise<{ bytes: Uint8Array; width: number; height: number }> {
  const sharp = await sharpFor(o.engine ?? 'auto');
  const quality = Math.round(o.quality ?? (o.format === 'webp' ? 80 : o.format === 'avif' ? 50 : 85));
  try {
    let s = sharp(bytes, { page, limitInputPixels: o.maxPixels, failOn: 'error' }).autoOrient();
    if (o.size) {
      const m = await sharp(bytes, { page }).metadata();
      const turned = (m.orientation ?? 1) >= 5;
      const t = o.size(turned ? m.height : m.width, turned ? m.width : m.height);
      s = s.resize(t.width, t.height, { fit: 'fill', kernel: 'lanczos3' });
    }
    s = sharpEncode(s.toColourspace('srgb'), o.format, quality, o);
    const { data, info } = await s.toBuffer({ resolveWithObject: true });
    return { bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  } catch (e) {
    throw corrupt(e);
  }
}

function flattenForWasm(img: Rgba, white: boolean, gray: boolean): Uint8ClampedArray {
  const d = new Uint8ClampedArray(img.data);
  for (let i = 0; i < d.length; i += 4) {
    if (white) {
      const a = d[i + 3]! / 255;
      for (let c = 0; c < 3; c++) d[i + c] = d[i + c]! * a + 255 * (1 - a);
      d[i + 3] = 255;
    }
    if (gray) d[i] = d[i + 1] = d[i + 2] = 0.2126 * d[i]! + 0.7152 * d[i + 1]! + 0.0722 * d[i + 2]!;
  }
  return d;
}

/** Formats this runtime decodes and encodes, measured once at start by round-tripping a 2×2 image. */
export async function measureFormats(engine: Engine = 'auto'): Promise<{ input: ImageFormat[]; output: OutputFormat[] }> {
  const probe: Rgba = {
    data: new Uint8ClampedArray([255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 128]),
    width: 2,
    height: 2,
  };
  const output: OutputFormat[] = [];
  const input: ImageFormat[] = ['bmp', 'tiff'];
  const { probeImage } = await import('./probe.ts');
  const { encodeTiff } = await import('./tiff.ts');
  for (const f of OUTPUT_FORMATS) {
    try {
      const bytes = f === 'tiff' ? encodeTiff([{ kind: 'rgba', ...probe }]) : await encodeImage(probe, f, { engine });
      output.push(f);
      const p = probeImage(bytes);
      const d = await decodeImage(bytes, p.format, p.pages.length, { engine, maxPixels: 16 });
      if (d.pages[0]?.width === 2 && !input.includes(p.format)) input.push(p.format);
    } catch { /* not available in this runtime */ }
  }
  return { input: input.sort(), output };
}
