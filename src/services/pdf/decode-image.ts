/**
 * Image inputs sniffed by their bytes (never by name) and decoded to RGBA where a PDF cannot embed them
 * as they are. JPEG and PNG are embedded directly by pdf-lib; WebP decodes with sharp or the @jsquash
 * WASM decoder; TIFF with utif2 (every page); AVIF with sharp only (no WASM AVIF decoder is shipped).
 */
import { readFile } from 'node:fs/promises';
import { packageFile } from '../../runtime/assets.ts';
import UTIF from 'utif2';
import { ServiceError } from '../errors.ts';
import { loadSharp, type Rgba } from './encode-image.ts';

export type ImageKind = 'jpeg' | 'png' | 'webp' | 'tiff' | 'avif';

export function sniffImage(b: Uint8Array): ImageKind | null {
  const ascii = (from: number, to: number) => String.fromCharCode(...b.subarray(from, to));
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b[0] === 0x89 && ascii(1, 4) === 'PNG') return 'png';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'webp';
  if ((b[0] === 0x49 && b[1] === 0x49 && b[2] === 0x2a && b[3] === 0) || (b[0] === 0x4d && b[1] === 0x4d && b[2] === 0 && b[3] === 0x2a)) {
    return 'tiff';
  }
  if (ascii(4, 8) === 'ftyp' && /avi[fs]/.test(ascii(8, 32))) return 'avif';
  return null;
}

let webpDec: Promise<(b: ArrayBuffer) => Promise<ImageData>> | undefined;

async function decodeWebp(bytes: Uint8Array): Promise<Rgba> {
  const sharp = await loadSharp();
  if (sharp) return viaSharp(bytes);
  webpDec ??= (async () => {
    const mod = await import('@jsquash/webp/decode.js');
    await mod.init(await WebAssembly.compile(await readFile(packageFile('@jsquash/webp/codec/dec/webp_dec.wasm'))));
    return (b: ArrayBuffer) => mod.default(b);
  })();
  const img = await (await webpDec)(bytes.slice().buffer as ArrayBuffer);
  return { data: img.data, width: img.width, height: img.height };
}

async function viaSharp(bytes: Uint8Array): Promise<Rgba> {
  const sharp = (await loadSharp()) as unknown as
    | ((
      b: Uint8Array,
    ) => {
      ensureAlpha(): {
        raw(): { toBuffer(o: { resolveWithObject: true }): Promise<{ data: Buffer; info: { width: number; height: number } }> };
      };
    })
    | null;
  if (!sharp) {
    throw new ServiceError(
      415,
      'unsupported_file_type',
      'AVIF input needs the sharp image library, which is not available in this runtime.',
    );
  }
  try {
    const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    return { data: new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  } catch (e) {
    throw new ServiceError(422, 'image_corrupt', `The image cannot be decoded: ${(e as Error).message}`);
  }
}

function decodeTiff(bytes: Uint8Array): Rgba[] {
  try {
    const buf = bytes.slice().buffer as ArrayBuffer;
    const ifds = UTIF.decode(buf).filter((ifd) => ifd['t256'] && ifd['t257']); // pages have width/height
    return ifds.map((ifd) => {
      UTIF.decodeImage(buf, ifd);
      return { data: new Uint8ClampedArray(UTIF.toRGBA8(ifd).buffer), width: ifd.width as number, height: ifd.height as number };
    });
  } catch (e) {
    throw new ServiceError(422, 'image_corrupt', `The TIFF cannot be decoded: ${(e as Error).message}`);
  }
}

/** RGBA frames of a non-JPEG/PNG image (TIFF may give several). */
export async function decodeFrames(kind: ImageKind, bytes: Uint8Array): Promise<Rgba[]> {
  if (kind === 'tiff') return decodeTiff(bytes);
  if (kind === 'webp') return [await decodeWebp(bytes)];
  if (kind === 'avif') return [await viaSharp(bytes)];
  throw new Error(`decodeFrames: ${kind} is embedded directly`);
}
