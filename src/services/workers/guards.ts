/**
 * Limits checked before an engine sees the bytes (docs/limits.md): the pixels an image declares in its
 * header, and for a PDF the decompressed size of every Flate stream (inflated and counted, never kept)
 * and the pixels of every image it embeds. Cheap next to the work they protect.
 */
import { Unzlib } from 'fflate';
import type { DocFormat } from '../documents/detect.ts';
import { checkPixels, limitExceeded, type Limits } from '../limits.ts';
import { imageSize } from './image-size.ts';

interface Ctx {
  limits: Limits;
  signal?: AbortSignal;
}

export function guardImage(bytes: Uint8Array, ctx: Ctx): void {
  const size = imageSize(bytes);
  if (size) checkPixels(size.width, size.height, ctx.limits);
}

export async function guardDocument(bytes: Uint8Array, format: DocFormat, ctx: Ctx): Promise<void> {
  if (format === 'pdf') await guardPdf(bytes, ctx);
  else guardImage(bytes, ctx);
}

const latin1 = new TextDecoder('latin1');
const STREAM = /stream\r?\n/g;

/** Decompressed bytes of each Flate stream and the declared size of each image XObject of a PDF. */
export async function guardPdf(bytes: Uint8Array, ctx: Ctx): Promise<void> {
  const l = ctx.limits;
  const text = latin1.decode(bytes);
  let total = 0;
  let from = 0;
  STREAM.lastIndex = 0;
  for (let m = STREAM.exec(text); m; m = STREAM.exec(text)) {
    const start = m.index + m[0].length;
    if (m.index > 0 && /[a-z]/i.test(text[m.index - 1]!)) continue; // "endstream"
    const dictStart = text.lastIndexOf('<<', m.index);
    const dict = dictStart >= from ? text.slice(dictStart, m.index) : '';
    let end = text.indexOf('endstream', start);
    if (end < 0) end = text.length;
    from = end;
    STREAM.lastIndex = end;
    if (/\/Subtype\s*\/Image/.test(dict)) {
      const w = /\/Width\s+(\d+)/.exec(dict);
      const h = /\/Height\s+(\d+)/.exec(dict);
      if (w && h) checkPixels(Number(w[1]), Number(h[1]), l);
    }
    if (!/\/FlateDecode|\/Fl\b/.test(dict)) continue;
    total += inflatedSize(bytes.subarray(start, end), l, total);
    if (total > l.maxPdfDecompressedBytes) {
      throw limitExceeded(
        'maxPdfDecompressedBytes',
        422,
        'decompressed_size_limit_exceeded',
        "the document's streams decompress to more bytes than allowed",
        l,
      );
    }
    ctx.signal?.throwIfAborted();
  }
}

/** Inflates a zlib stream only to count it; stops at the limit. Corrupt data counts as what inflated. */
function inflatedSize(data: Uint8Array, l: Limits, before: number): number {
  let n = 0;
  let over: 'stream' | 'total' | null = null;
  const z = new Unzlib((chunk) => {
    n += chunk.length;
    if (n > l.maxPdfStreamBytes) over = 'stream';
    else if (before + n > l.maxPdfDecompressedBytes) over = 'total';
    if (over) throw new Error('limit');
  });
  try {
    // Feed in slices so a bomb is stopped after at most one slice's worth of output.
    for (let i = 0; i < data.length && !over; i += 16384) {
      z.push(data.subarray(i, Math.min(data.length, i + 16384)), i + 16384 >= data.length);
    }
  } catch {
    // over a limit (checked below) or corrupt: the engine reports corrupt data in its own words
  }
  if (over === 'stream') {
    throw limitExceeded(
      'maxPdfStreamBytes',
      422,
      'decompressed_size_limit_exceeded',
      'a stream of the document decompresses to more bytes than allowed',
      l,
    );
  }
  if (over === 'total') {
    throw limitExceeded(
      'maxPdfDecompressedBytes',
      422,
      'decompressed_size_limit_exceeded',
      "the document's streams decompress to more bytes than allowed",
      l,
    );
  }
  return n;
}
