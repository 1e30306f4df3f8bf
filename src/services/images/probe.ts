/**
 * What an image claims to be, read from its headers only: the format (sniffed by bytes, never by name),
 * the declared width and height of every page, and so the pixel count a decoder would allocate.
 * Reading this before decoding is what stops a decompression bomb (a tiny PNG declaring 50000×50000).
 */
import { ServiceError, unsupportedFileType } from '../errors.ts';

export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'avif' | 'heic' | 'tiff' | 'gif' | 'bmp';

export interface Probe {
  format: ImageFormat;
  /** declared size of each page (TIFF: every IFD with a size; others: one) */
  pages: { width: number; height: number }[];
}

const ascii = (b: Uint8Array, from: number, to: number) => String.fromCharCode(...b.subarray(from, Math.min(to, b.length)));

export function sniffFormat(b: Uint8Array): ImageFormat | null {
  if (b.length < 12) return null;
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b[0] === 0x89 && ascii(b, 1, 4) === 'PNG') return 'png';
  if (ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP') return 'webp';
  if ((b[0] === 0x49 && b[1] === 0x49 && b[2] === 0x2a && b[3] === 0) || (b[0] === 0x4d && b[1] === 0x4d && b[2] === 0 && b[3] === 0x2a)) {
    return 'tiff';
  }
  if (ascii(b, 0, 4) === 'GIF8') return 'gif';
  if (b[0] === 0x42 && b[1] === 0x4d && b.length > 26) return 'bmp';
  if (ascii(b, 4, 8) === 'ftyp') {
    const brands = ascii(b, 8, Math.min(b.length, 8 + new DataView(b.buffer, b.byteOffset).getUint32(0) - 8));
    if (/avi[fs]/.test(brands)) return 'avif';
    if (/hei[cxms]|hev[cx]|mif1|msf1/.test(brands)) return 'heic';
  }
  return null;
}

const corrupt = (what: string) => new ServiceError(422, 'image_corrupt', `The image cannot be decoded: ${what}.`);

function pngSize(b: Uint8Array, dv: DataView) {
  if (ascii(b, 12, 16) !== 'IHDR' || b.length < 24) throw corrupt('PNG without an IHDR chunk');
  return { width: dv.getUint32(16), height: dv.getUint32(20) };
}

function jpegSize(b: Uint8Array, dv: DataView) {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) {
      i++;
      continue;
    }
    const m = b[i + 1]!;
    if (m === 0xff) {
      i++;
      continue;
    }
    if (m === 0xd8 || m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      i += 2;
      continue;
    }
    const len = dv.getUint16(i + 2);
    // SOF0..SOF15 except DHT (c4), JPG (c8) and DAC (cc)
    if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc) {
      return { width: dv.getUint16(i + 7), height: dv.getUint16(i + 5) };
    }
    i += 2 + len;
  }
  throw corrupt('JPEG without a frame header');
}

function webpSize(b: Uint8Array, dv: DataView) {
  const kind = ascii(b, 12, 16);
  if (kind === 'VP8X') return { width: 1 + (dv.getUint32(24, true) & 0xffffff), height: 1 + (dv.getUint32(27, true) & 0xffffff) };
  if (kind === 'VP8L') {
    const bits = dv.getUint32(21, true);
    return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
  }
  if (kind === 'VP8 ') return { width: dv.getUint16(26, true) & 0x3fff, height: dv.getUint16(28, true) & 0x3fff };
  throw corrupt('WebP without a VP8/VP8L/VP8X chunk');
}

function gifSize(dv: DataView) {
  return { width: dv.getUint16(6, true), height: dv.getUint16(8, true) };
}

function bmpSize(dv: DataView) {
  const hdr = dv.getUint32(14, true);
  if (hdr === 12) return { width: dv.getUint16(18, true), height: dv.getUint16(20, true) };
  return { width: Math.abs(dv.getInt32(18, true)), height: Math.abs(dv.getInt32(22, true)) };
}

function tiffPages(b: Uint8Array, dv: DataView) {
  const le = b[0] === 0x49;
  const u16 = (o: number) => dv.getUint16(o, le);
  const u32 = (o: number) => dv.getUint32(o, le);
  const pages: { width: number; height: number }[] = [];
  let ifd = u32(4);
  const seen = new Set<number>();
  while (ifd && ifd + 2 <= b.length && !seen.has(ifd) && seen.size < 10_000) {
    seen.add(ifd);
    const n = u16(ifd);
    if (ifd + 2 + n * 12 + 4 > b.length) throw corrupt('TIFF directory past the end of the file');
    let width = 0, height = 0;
    for (let k = 0; k < n; k++) {
      const e = ifd + 2 + k * 12;
      const tag = u16(e), type = u16(e + 2);
      const val = type === 3 ? u16(e + 8) : u32(e + 8);
      if (tag === 256) width = val;
      else if (tag === 257) height = val;
    }
    if (width && height) pages.push({ width, height });
    ifd = u32(ifd + 2 + n * 12);
  }
  if (!pages.length) throw corrupt('TIFF without a page');
  return pages;
}

/** ISO-BMFF (AVIF, HEIC): the largest `ispe` (image spatial extent) property in the file's meta box. */
function heifSize(b: Uint8Array, dv: DataView) {
  let best = { width: 0, height: 0 };
  const limit = Math.min(b.length - 20, 1 << 20); // the meta box sits at the start
  for (let i = 4; i < limit; i++) {
    if (b[i] === 0x69 && b[i + 1] === 0x73 && b[i + 2] === 0x70 && b[i + 3] === 0x65) { // "ispe"
      const w = dv.getUint32(i + 8), h = dv.getUint32(i + 12);
      if (w * h > best.width * best.height) best = { width: w, height: h };
    }
  }
  if (!best.width) throw corrupt('HEIF/AVIF without an image size (ispe)');
  return best;
}

/** Format and declared page sizes; 415 when the bytes are no image format this service reads. */
export function probeImage(b: Uint8Array): Probe {
  const format = sniffFormat(b);
  if (!format) throw unsupportedFileType('The input is not an image this service reads (JPEG, PNG, WebP, AVIF, HEIC, TIFF, GIF, BMP).');
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  try {
    switch (format) {
      case 'png':
        return { format, pages: [pngSize(b, dv)] };
      case 'jpeg':
        return { format, pages: [jpegSize(b, dv)] };
      case 'webp':
        return { format, pages: [webpSize(b, dv)] };
      case 'gif':
        return { format, pages: [gifSize(dv)] };
      case 'bmp':
        return { format, pages: [bmpSize(dv)] };
      case 'tiff':
        return { format, pages: tiffPages(b, dv) };
      default:
        return { format, pages: [heifSize(b, dv)] };
    }
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw corrupt(`truncated ${format} header`);
  }
}

/**
 * Refuses, before any decoder allocates, a page declaring more pixels than `maxPixels`.
 * 413 input_too_large: the input is too large to process (shrinking it is the remedy).
 */
export function checkPixels(p: Probe, maxPixels: number, pageIndexes?: number[]): void {
  const idx = pageIndexes ?? p.pages.map((_, i) => i);
  for (const i of idx) {
    const pg = p.pages[i];
    if (!pg) continue;
    if (pg.width <= 0 || pg.height <= 0) throw corrupt('zero width or height');
    if (pg.width * pg.height > maxPixels) {
      throw new ServiceError(
        413,
        'input_too_large',
        `The image declares ${pg.width}×${pg.height} pixels (${(pg.width * pg.height).toLocaleString('en')}), more than the limit of ${
          maxPixels.toLocaleString('en')
        } pixels (setting maxImagePixels).`,
      );
    }
  }
}
