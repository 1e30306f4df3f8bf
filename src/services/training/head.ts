/**
 * A classifier head over fixed embeddings, in plain typed arrays: multinomial logistic regression
 * (`logistic`) or one hidden ReLU layer (`mlp`), trained with softmax cross-entropy, mini-batches and Adam.
 * Pure functions of numbers: no model, no I/O. The training loop yields to the event loop between
 * batches and checks the abort signal there, so a cancel is honoured within milliseconds.
 */

import { seededRandom } from '../inference/sampling.ts';

export type HeadType = 'logistic' | 'mlp';

/** Weights as plain arrays of numbers, row-major (what classifier.json stores). */
export interface HeadWeights {
  type: HeadType;
  inputDims: number;
  classes: number;
  /** Hidden units (mlp only). */
  hidden?: number;
  layers: { w: number[]; b: number[]; rows: number; cols: number }[];
}

export interface TrainOptions {
  type: HeadType;
  epochs: number;
  learningRate: number;
  batchSize: number;
  hidden: number;
  /** L2 penalty on the weights. */
  weightDecay: number;
  seed: number;
  signal?: AbortSignal;
  /** Called after each epoch with the mean training loss. */
  onEpoch?: (epoch: number, loss: number) => void;
}

interface Layer {
  w: Float32Array;
  b: Float32Array;
  rows: number;
  cols: number;
}

function initLayer(rows: number, cols: number, rand: () => number): Layer {
  // He/Glorot-style scale keeps early logits small
  const scale = Math.sqrt(2 / (rows + cols));
  const w = new Float32Array(rows * cols);
  for (let i = 0; i < w.length; i++) w[i] = (rand() * 2 - 1) * scale;
  return { w, b: new Float32Array(rows), rows, cols };
}

/** out = W·x + b for one input. */
function affine(l: Layer, x: Float32Array, out: Float32Array) {
  for (let r = 0; r < l.rows; r++) {
    let s = l.b[r];
    const off = r * l.cols;
    for (let c = 0; c < l.cols; c++) s += l.w[off + c] * x[c];
    out[r] = s;
  }
}

function softmaxInPlace(v: Float32Array) {
  let max = -Infinity;
  for (const x of v) if (x > max) max = x;
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] = Math.exp(v[i] - max);
  for (let i = 0; i < v.length; i++) v[i] /= sum;
}

class Adam {
  readonly #m: Float32Array;
  readonly #v: Float32Array;
  #t = 0;
  constructor(readonly params: Float32Array, readonly lr: number) {
    this.#m = new Float32Array(params.length);
    this.#v = new Float32Array(params.length);
  }
  step(grad: Float32Array) {
    this.#t++;
    const b1 = 0.9, b2 = 0.999, eps = 1e-8;
    const c1 = 1 - b1 ** this.#t, c2 = 1 - b2 ** this.#t;
    for (let i = 0; i < grad.length; i++) {
      this.#m[i] = b1 * this.#m[i] + (1 - b1) * grad[i];
      this.#v[i] = b2 * this.#v[i] + (1 - b2) * grad[i] * grad[i];
      this.params[i] -= (this.lr * this.#m[i]) / c1 / (Math.sqrt(this.#v[i] / c2) + eps);
    }
  }
}

const yieldToLoop = () => new Promise<void>((r) => setTimeout(r, 0));

/** Trains a head on `x` (one embedding per row) with integer labels `y` in [0, classes). */
export async function trainHead(x: Float32Array[], y: number[], classes: number, o: TrainOptions): Promise<HeadWeights> {
  const dims = x[0]?.length ?? 0;
  const rand = seededRandom(o.seed);
  const layers: Layer[] = o.type === 'mlp'
    ? [initLayer(o.hidden, dims, rand), initLayer(classes, o.hidden, rand)]
    : [initLayer(classes, dims, rand)];
  const grads = layers.map((l) => ({ w: new Float32Array(l.w.length), b: new Float32Array(l.b.length) }));
  const opts = layers.flatMap((l) => [new Adam(l.w, o.learningRate), new Adam(l.b, o.learningRate)]);
  const acts = layers.map((l) => new Float32Array(l.rows));
  const deltas = layers.map((l) => new Float32Array(l.rows));
  const order = x.map((_, i) => i);
  let lastYield = performance.now();

  for (let epoch = 1; epoch <= o.epochs; epoch++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    let lossSum = 0;
    for (let start = 0; start < order.length; start += o.batchSize) {
      o.signal?.throwIfAborted();
      const batch = order.slice(start, start + o.batchSize);
      for (const g of grads) g.w.fill(0), g.b.fill(0);
      for (const idx of batch) {
        // forward
        let input = x[idx];
        layers.forEach((l, k) => {
          affine(l, input, acts[k]);
          if (k < layers.length - 1) { for (let r = 0; r < acts[k].length; r++) acts[k][r] = Math.max(0, acts[k][r]); }
          input = acts[k];
        });
        const probs = acts[layers.length - 1];
        softmaxInPlace(probs);
        lossSum -= Math.log(Math.max(probs[y[idx]], 1e-12));
        // backward: dLoss/dlogits = p - onehot
        const top = deltas[layers.length - 1];
        top.set(probs);
        top[y[idx]] -= 1;
        for (let k = layers.length - 1; k >= 0; k--) {
          const l = layers[k];
          const below = k === 0 ? x[idx] : acts[k - 1];
          const d = deltas[k];
          for (let r = 0; r < l.rows; r++) {
            grads[k].b[r] += d[r];
            const off = r * l.cols;
            for (let c = 0; c < l.cols; c++) grads[k].w[off + c] += d[r] * below[c];
          }
          if (k > 0) {
            const prev = deltas[k - 1];
            for (let c = 0; c < l.cols; c++) {
              let s = 0;
              for (let r = 0; r < l.rows; r++) s += l.w[r * l.cols + c] * d[r];
              prev[c] = acts[k - 1][c] > 0 ? s : 0; // ReLU
            }
          }
        }
      }
      grads.forEach((g, k) => {
        const n = batch.length;
        for (let i = 0; i < g.w.length; i++) g.w[i] = g.w[i] / n + o.weightDecay * layers[k].w[i];
        for (let i = 0; i < g.b.length; i++) g.b[i] /= n;
        opts[2 * k].step(g.w);
        opts[2 * k + 1].step(g.b);
      });
      if (performance.now() - lastYield > 20) {
        await yieldToLoop();
        lastYield = performance.now();
      }
    }
    o.onEpoch?.(epoch, lossSum / order.length);
    await yieldToLoop();
    lastYield = performance.now();
  }
  return {
    type: o.type,
    inputDims: dims,
    classes,
    ...(o.type === 'mlp' ? { hidden: o.hidden } : {}),
    layers: layers.map((l) => ({ w: Array.from(l.w), b: Array.from(l.b), rows: l.rows, cols: l.cols })),
  };
}

/** Class probabilities for one embedding. */
export function predictHead(h: HeadWeights, x: ArrayLike<number>): Float32Array {
  let input = Float32Array.from(x);
  h.layers.forEach((raw, k) => {
    const l: Layer = { w: Float32Array.from(raw.w), b: Float32Array.from(raw.b), rows: raw.rows, cols: raw.cols };
    const out = new Float32Array(l.rows);
    affine(l, input, out);
    if (k < h.layers.length - 1) { for (let r = 0; r < out.length; r++) out[r] = Math.max(0, out[r]); }
    input = out;
  });
  softmaxInPlace(input);
  return input;
}

/** Checks a stored head's shapes (a damaged classifier.json is refused, never half-used). */
export function isHeadWeights(v: unknown): v is HeadWeights {
  const h = v as HeadWeights;
  if (!h || (h.type !== 'logistic' && h.type !== 'mlp') || !Array.isArray(h.layers) || h.layers.length !== (h.type === 'mlp' ? 2 : 1)) {
    return false;
  }
  let cols = h.inputDims;
  for (const l of h.layers) {
    if (l.cols !== cols || !Array.isArray(l.w) || l.w.length !== l.rows * l.cols || !Array.isArray(l.b) || l.b.length !== l.rows) {
      return false;
    }
    cols = l.rows;
  }
  return cols === h.classes;
}
