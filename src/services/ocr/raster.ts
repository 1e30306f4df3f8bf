/**
 * Grayscale rasters for OCR: decoding (sharp; BMP by hand since libvips has no BMP loader), rotation,
 * cropping, resizing, and PGM encoding (the cheapest format tesseract's Leptonica reads).
 */
import { loadSharp } from '../../runtime/sharp.ts';
import { capabilityUnavailable, ServiceError } from '../errors.ts';

export interface Gray {
  data: Uint8Array;
  width: number;
  height: number;
}

type SharpModule = (typeof import('sharp'))['default'];
export const sharpLib = (): Promise<SharpModule | null> => loadSharp();
async function needSharp(): Promise<SharpModule> {
  const s = await sharpLib();
  // Not the client's fault and not transient: this build lacks the capability: 501 capability_unavailable (docs/errors.md).
  if (!s) {
    throw capabilityUnavailable(
      'image decoding for OCR and thumbnails needs sharp (libvips), which this build (for example the single binary) does not carry',
    );
  }
  return s;
}

const isBmp = (b: Uint8Array) => b[0] === 0x42 && b[1] === 0x4d && b.length > 54;

/** Every frame (TIFF pages, the first GIF frame otherwise) as 8-bit gray. */
export async function decodeGrayFrames(bytes: Uint8Array): Promise<Gray[]> {
  const sharp = await needSharp();
  if (isBmp(bytes)) {
    const rgba = decodeBmp(bytes);
    return [await rawToGray(sharp(rgba.data, { raw: { width: rgba.width, height: rgba.height, channels: 4 } }))];
  }
  try {
    const meta = await sharp(bytes).metadata();
    const pages = meta.format === 'tiff' ? (meta.pages ?? 1) : 1;
    const out: Gray[] = [];
    for (let p = 0; p < pages; p++) out.push(await rawToGray(sharp(bytes, { page: p, limitInputPixels: 400_000_000 }).rotate()));
    return out;
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw new ServiceError(422, 'image_corrupt', `The image cannot be decoded: ${(e as Error).message}`);
  }
}

async function rawToGray(img: ReturnType<SharpModule>): Promise<Gray> {
  const { data, info } = await img.flatten({ background: '#ffffff' }).greyscale().raw().toBuffer({ resolveWithObject: true });
  if (info.channels === 1) {
    return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  }
  const out = new Uint8Array(info.width * info.height);
  for (let i = 0; i < out.length; i++) out[i] = data[i * info.channels]!;
  return { data: out, width: info.width, height: info.height };
}

export async function grayFromRgba(rgba: { data: Uint8Array | Uint8ClampedArray; width: number; height: number }): Promise<Gray> {
  const out = new Uint8Array(rgba.width * rgba.height);
  const d = rgba.data;
  for (let i = 0, j = 0; i < out.length; i++, j += 4) {
    const a = d[j + 3]! / 255;
    const y = 0.299 * d[j]! + 0.587 * d[j + 1]! + 0.114 * d[j + 2]!;
    out[i] = Math.round(y * a + 255 * (1 - a));
  }
  return { data: out, width: rgba.width, height: rgba.height };
}

/** Rotates clockwise by `degrees` (any angle), white background, canvas grown to fit. */
export async function rotateGray(g: Gray, degrees: number): Promise<Gray> {
  const d = ((degrees % 360) + 360) % 360;
  if (d === 0) return g;
  if (d === 90 || d === 180 || d === 270) return rotateQuarter(g, d);
  const sharp = await needSharp();
  const { data, info } = await sharp(g.data, { raw: { width: g.width, height: g.height, channels: 1 } })
    .rotate(degrees, { background: { r: 255, g: 255, b: 255, alpha: 1 } })
    .greyscale().raw().toBuffer({ resolveWithObject: true });
  return info.channels === 1
    ? { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height }
    : rawChannel0(data, info);
}

function rawChannel0(data: Buffer, info: { width: number; height: number; channels: number }): Gray {
  const out = new Uint8Array(info.width * info.height);
  for (let i = 0; i < out.length; i++) out[i] = data[i * info.channels]!;
  return { data: out, width: info.width, height: info.height };
}

export function rotateQuarter(g: Gray, d: 90 | 180 | 270): Gray {
  const { width: w, height: h, data } = g;
  if (d === 180) {
    const out = new Uint8Array(w * h);
    for (let i = 0, n = w * h; i < n; i++) out[i] = data[n - 1 - i]!;
    return { data: out, width: w, height: h };
  }
  const out = new Uint8Array(w * h);
  // clockwise 90: new(x', y') with x' = h-1-y, y' = x; new width h
  for (let y = 0; y < h; y++) {
    const row = y * w;
    for (let x = 0; x < w; x++) {
      const v = data[row + x]!;
      if (d === 90) out[x * h + (h - 1 - y)] = v;
      else out[(w - 1 - x) * h + y] = v;
    }
  }
  return { data: out, width: h, height: w };
}

/** Bilinear resize to an exact size. */
export function resizeGray(g: Gray, width: number, height: number): Gray {
  const out = new Uint8Array(width * height);
  const sx = g.width / width, sy = g.height / height;
  for (let y = 0; y < height; y++) {
    const fy = Math.max(0, (y + 0.5) * sy - 0.5);
    const y0 = Math.min(g.height - 1, Math.floor(fy)), y1 = Math.min(g.height - 1, y0 + 1), wy = fy - y0;
    for (let x = 0; x < width; x++) {
      const fx = Math.max(0, (x + 0.5) * sx - 0.5);
      const x0 = Math.min(g.width - 1, Math.floor(fx)), x1 = Math.min(g.width - 1, x0 + 1), wx = fx - x0;
      const a = g.data[y0 * g.width + x0]!, b = g.data[y0 * g.width + x1]!, c = g.data[y1 * g.width + x0]!, e = g.data[y1 * g.width + x1]!;
      out[y * width + x] = (a * (1 - wx) + b * wx) * (1 - wy) + (c * (1 - wx) + e * wx) * wy;
    }
  }
  return { data: out, width, height };
}

/** Area-average downscale by an integer factor (fast, used for analysis). */
export function shrink(g: Gray, factor: number): Gray {
  if (factor <= 1) return g;
  const w = Math.floor(g.width / factor), h = Math.floor(g.height / factor);
  const out = new Uint8Array(w * h);
  const n = factor * factor;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let s = 0;
      for (let dy = 0; dy < factor; dy++) {
        const row = (y * factor + dy) * g.width + x * factor;
        for (let dx = 0; dx < factor; dx++) s += g.data[row + dx]!;
      }
      out[y * w + x] = s / n;
    }
  }
  return { data: out, width: w, height: h };
}

export function cropGray(g: Gray, x: number, y: number, w: number, h: number): Gray {
  x = Math.max(0, Math.floor(x));
  y = Math.max(0, Math.floor(y));
  w = Math.max(1, Math.min(g.width - x, Math.ceil(w)));
  h = Math.max(1, Math.min(g.height - y, Math.ceil(h)));
  const out = new Uint8Array(w * h);
  for (let r = 0; r < h; r++) out.set(g.data.subarray((y + r) * g.width + x, (y + r) * g.width + x + w), r * w);
  return { data: out, width: w, height: h };
}

/** Binary PGM (P5): Leptonica reads it without a codec. */
export function toPgm(g: Gray): Uint8Array {
  const head = new TextEncoder().encode(`P5\n${g.width} ${g.height}\n255\n`);
  const out = new Uint8Array(head.length + g.data.length);
  out.set(head);
  out.set(g.data, head.length);
  return out;
}

export async function encodeGray(g: Gray, format: 'png' | 'webp' = 'png'): Promise<Uint8Array> {
  const sharp = await needSharp();
  const img = sharp(g.data, { raw: { width: g.width, height: g.height, channels: 1 } });
  return new Uint8Array(await (format === 'png' ? img.png({ compressionLevel: 6 }) : img.webp()).toBuffer());
}

/** Otsu threshold of a gray image. */
export function otsu(g: Gray): number {
  const hist = new Float64Array(256);
  for (let i = 0; i < g.data.length; i++) hist[g.data[i]!]!++;
  const total = g.data.length;
  let sum = 0;
  for (let i = 0; i < 256; i++) sum += i * hist[i]!;
  let sumB = 0, wB = 0, best = 0, thr = 128;
  for (let t = 0; t < 256; t++) {
    wB += hist[t]!;
    if (!wB) continue;
    const wF = total - wB;
    if (!wF) break;
    sumB += t * hist[t]!;
    const mB = sumB / wB, mF = (sum - sumB) / wF;
    const between = wB * wF * (mB - mF) ** 2;
    if (between > best) {
      best = between;
      thr = t;
    }
  }
  return thr;
}

/** Uncompressed BMP (1/4/8-bit palette, 24/32-bit) to RGBA. */
export function decodeBmp(b: Uint8Array): { data: Uint8Array; width: number; height: number } {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const off = dv.getUint32(10, true);
  const hdr = dv.getUint32(14, true);
  const width = hdr === 12 ? dv.getUint16(18, true) : dv.getInt32(18, true);
  const rawH = hdr === 12 ? dv.getInt16(20, true) : dv.getInt32(22, true);
  const bpp = dv.getUint16(hdr === 12 ? 24 : 28, true);
  const compression = hdr === 12 ? 0 : dv.getUint32(30, true);
  if (compression !== 0 && compression !== 3) throw new ServiceError(422, 'image_corrupt', 'compressed (RLE) BMP images are not supported');
  const height = Math.abs(rawH);
  const topDown = rawH < 0;
  if (width <= 0 || height <= 0 || width * height > 200_000_000) throw new ServiceError(422, 'image_corrupt', 'the BMP header is damaged');
  const palette: number[][] = [];
  if (bpp <= 8) {
    const entries = hdr === 12 ? 3 : 4;
    const count = (hdr === 12 ? 0 : dv.getUint32(46, true)) || 1 << bpp;
    for (let i = 0; i < count; i++) {
      const p = 14 + hdr + i * entries;
      palette.push([b[p + 2]!, b[p + 1]!, b[p]!]);
    }
  }
  const stride = Math.ceil((width * bpp) / 32) * 4;
  const out = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const row = off + (topDown ? y : height - 1 - y) * stride;
    if (row + stride > b.length + 3) throw new ServiceError(422, 'image_corrupt', 'the BMP is truncated');
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      let r = 0, g = 0, bl = 0;
      if (bpp === 24 || bpp === 32) {
        const p = row + x * (bpp / 8);
        bl = b[p] ?? 0;
        g = b[p + 1] ?? 0;
        r = b[p + 2] ?? 0;
      } else if (bpp <= 8) {
        const bit = x * bpp;
        const byte = b[row + (bit >> 3)] ?? 0;
        const idx = (byte >> (8 - bpp - (bit & 7))) & ((1 << bpp) - 1);
        [r, g, bl] = palette[idx] ?? [0, 0, 0];
      } else if (bpp === 16) {
        const v = dv.getUint16(row + x * 2, true);
        r = ((v >> 10) & 31) * 8;
        g = ((v >> 5) & 31) * 8;
        bl = (v & 31) * 8;
      }
      out[o] = r;
      out[o + 1] = g;
      out[o + 2] = bl;
      out[o + 3] = 255;
    }
  }
  return { data: out, width, height };
}
