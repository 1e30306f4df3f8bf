/**
 * RGBA pixels -> PNG / JPEG / WebP. Two engines: sharp (native libvips, the fast path, present wherever
 * its addon loads) and the @jsquash WASM codecs (portable: compiled binaries, Deno, Bun). 'auto' picks
 * sharp when it loads, else WASM. Each engine is loaded once, on first use.
 */
import { readFile } from 'node:fs/promises';
import { packageFile } from '../../runtime/assets.ts';
import { loadSharp as loadNativeSharp } from '../../runtime/sharp.ts';

export type ImageFormat = 'png' | 'jpeg' | 'webp';
export type Engine = 'auto' | 'sharp' | 'wasm';

export interface Rgba {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

type SharpFn = (input: Uint8Array | Uint8ClampedArray, opts: object) => {
  png(o?: object): { toBuffer(): Promise<Buffer> };
  jpeg(o?: object): { toBuffer(): Promise<Buffer> };
  webp(o?: object): { toBuffer(): Promise<Buffer> };
};
/** sharp, or null where its native addon does not load (the single binary among them). */
export const loadSharp = (): Promise<SharpFn | null> => loadNativeSharp();

const wasmFile = (spec: string) => readFile(packageFile(spec));

let png: Promise<(d: ImageData) => Promise<ArrayBuffer>> | undefined;
let jpeg: Promise<(d: ImageData, o: object) => Promise<ArrayBuffer>> | undefined;
let webp: Promise<(d: ImageData, o: object) => Promise<ArrayBuffer>> | undefined;

function wasmEncoder(format: ImageFormat) {
  if (format === 'png') {
    return (png ??= (async () => {
      const mod = await import('@jsquash/png/encode.js');
      await mod.init(await WebAssembly.compile(await wasmFile('@jsquash/png/codec/pkg/squoosh_png_bg.wasm')));
      return (d: ImageData) => mod.default(d);
    })());
  }
  if (format === 'jpeg') {
    return (jpeg ??= (async () => {
      const mod = await import('@jsquash/jpeg/encode.js');
      await mod.init(await WebAssembly.compile(await wasmFile('@jsquash/jpeg/codec/enc/mozjpeg_enc.wasm')));
      return (d: ImageData, o: object) => mod.default(d, o);
    })());
  }
  return (webp ??= (async () => {
    const mod = await import('@jsquash/webp/encode.js');
    // every runtime we target has wasm SIMD, and the package picks its SIMD build when SIMD is present
    await mod.init(await WebAssembly.compile(await wasmFile('@jsquash/webp/codec/enc/webp_enc_simd.wasm')));
    return (d: ImageData, o: object) => mod.default(d, o);
  })());
}

export async function encodeRgba(img: Rgba, format: ImageFormat, opts: { quality?: number; engine?: Engine } = {}): Promise<Uint8Array> {
  const quality = opts.quality ?? (format === 'webp' ? 80 : 85);
  const engine = opts.engine ?? 'auto';
  if (engine !== 'wasm') {
    const sharp = await loadSharp();
    if (sharp) {
      const s = sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } });
      const out = format === 'png'
        ? s.png({ compressionLevel: 6 })
        : format === 'jpeg'
        ? s.jpeg({ quality, mozjpeg: false })
        : s.webp({ quality });
      return new Uint8Array(await out.toBuffer());
    }
    if (engine === 'sharp') throw new Error('sharp is not available in this runtime');
  }
  const enc = await wasmEncoder(format);
  const data = { data: img.data, width: img.width, height: img.height, colorSpace: 'srgb' } as ImageData;
  return new Uint8Array(await enc(data, { quality }));
}
