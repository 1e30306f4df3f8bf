/**
 * imageRedact: boxes, and words found by OCR, filled with a solid colour in the pixels; the output carries
 * no metadata (EXIF thumbnails and XMP could hold the redacted content). OCR runs on the image as it is
 * (no deskew), so word boxes are in the image's own pixels.
 */
import { invalidArgument } from '../errors.ts';
import { ocrGray, pickEngine } from '../ocr/ocr.ts';
import type { Rgba } from './codecs.ts';
import { loadPage } from './load.ts';
import { type UtilityOutputOptions, writeOutput } from './output.ts';
import { grayOf } from './pixels.ts';
import { parseColor } from './watermark.ts';

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface RedactOptions extends UtilityOutputOptions {
  boxes?: Box[];
  /** words or phrases to find by OCR (case-insensitive, whole words) */
  text?: string[];
  color?: string;
  /** OCR language (eng default; zh for Chinese) */
  language?: string;
  signal?: AbortSignal;
}

const norm = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

export async function imageRedact(bytes: Uint8Array, o: RedactOptions) {
  if (!o.boxes?.length && !o.text?.length) throw invalidArgument('give boxes or text to redact.');
  const color = parseColor(o.color ?? '#000000');
  const page = await loadPage(bytes, o);
  const { img } = page;
  const boxes: Box[] = [];
  for (const [i, b] of (o.boxes ?? []).entries()) {
    if (!(b.width > 0 && b.height > 0) || b.x < 0 || b.y < 0 || b.x + b.width > img.width || b.y + b.height > img.height) {
      throw invalidArgument(`boxes.${i} (${b.x},${b.y} ${b.width}×${b.height}) lies outside the ${img.width}×${img.height} image.`);
    }
    boxes.push(b);
  }
  let found = 0;
  if (o.text?.length) {
    const targets = o.text.map((t) => t.split(/\s+/).map(norm).filter(Boolean)).filter((t) => t.length);
    const res = await ocrGray({ data: grayOf(img), width: img.width, height: img.height }, 1, pickEngine('auto', o.language), {
      detectOrientation: false,
      deskew: false,
      signal: o.signal,
    });
    for (const line of res.lines) {
      const words = line.words.map((w) => norm(w.text));
      for (const t of targets) {
        for (let s = 0; s + t.length <= words.length; s++) {
          // a target word matches a word that contains it (punctuation stripped): "4711," or "SECRET:"
          if (!t.every((w, k) => words[s + k]!.includes(w))) continue;
          found++;
          for (let k = 0; k < t.length; k++) {
            const b = line.words[s + k]!.box;
            const pad = Math.max(2, Math.round(b.height * 0.15));
            boxes.push({ x: b.x - pad, y: b.y - pad, width: b.width + 2 * pad, height: b.height + 2 * pad });
          }
        }
      }
    }
  }
  const out: Rgba = { data: new Uint8ClampedArray(img.data), width: img.width, height: img.height };
  for (const b of boxes) fill(out, b, color);
  return { ...(await writeOutput(out, page.format, o)), pageIndex: page.pageIndex, boxes: boxes.length, textMatches: found };
}

function fill(img: Rgba, b: Box, [r, g, bl]: [number, number, number]) {
  const x0 = Math.max(0, Math.floor(b.x)), y0 = Math.max(0, Math.floor(b.y));
  const x1 = Math.min(img.width, Math.ceil(b.x + b.width)), y1 = Math.min(img.height, Math.ceil(b.y + b.height));
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * img.width + x) * 4;
      img.data[i] = r;
      img.data[i + 1] = g;
      img.data[i + 2] = bl;
      img.data[i + 3] = 255;
    }
  }
}
