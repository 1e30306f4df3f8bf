/**
 * Logits processors in transformers.js' calling convention: `(input_ids: bigint[][], logits: Tensor)`,
 * modifying `logits.data` in place (batch size 1). Plain functions: LogitsProcessorList just calls them.
 *
 * Sampling is done here, not by transformers.js, because its sampler has no per-request seed: the
 * sampler processor picks a token with a seeded PRNG and masks every other logit, so transformers.js'
 * greedy step selects exactly that token.
 */
import { nativeKernels } from '../../runtime/kernels.ts';

export interface LogitsLike {
  data: Float32Array | ArrayLike<number>;
  dims: number[];
}
export type LogitsProcessorFn = (inputIds: bigint[][], logits: LogitsLike) => LogitsLike;
/** Anything transformers.js can call as a processor (a function or a Callable LogitsProcessor instance). */
export type LogitsProcessorLike = LogitsProcessorFn | ((...args: never[]) => unknown);

export interface PenaltyOptions {
  /** Hugging Face style: >1 discourages any token already in the context (prompt + output). 1 = off. */
  repetitionPenalty?: number;
  /** OpenAI style, over generated tokens: subtract once per distinct token seen. */
  presencePenalty?: number;
  /** OpenAI style, over generated tokens: subtract per occurrence. */
  frequencyPenalty?: number;
}

export function createPenaltyProcessor(promptLength: number, o: PenaltyOptions): LogitsProcessorFn | undefined {
  const rep = o.repetitionPenalty ?? 1;
  const pres = o.presencePenalty ?? 0;
  const freq = o.frequencyPenalty ?? 0;
  if (rep === 1 && pres === 0 && freq === 0) return undefined;
  return (inputIds, logits) => {
    const data = logits.data as Float32Array;
    const ids = inputIds[0];
    if (rep !== 1) {
      const seen = new Set<number>();
      for (const id of ids) seen.add(Number(id));
      for (const id of seen) data[id] = data[id] > 0 ? data[id] / rep : data[id] * rep;
    }
    if (pres !== 0 || freq !== 0) {
      const counts = new Map<number, number>();
      for (let i = promptLength; i < ids.length; i++) {
        const id = Number(ids[i]);
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
      for (const [id, c] of counts) data[id] -= pres + freq * c;
    }
    return logits;
  };
}

/** mulberry32: tiny, fast, good enough for sampling; same seed ⇒ same stream on every runtime. */
export function seededRandom(seed: number): () => number {
  return randomOver({ state: seed >>> 0 });
}

/** mulberry32 whose state lives in `g` (so it can travel as data), advanced by each call. */
function randomOver(g: { state: number }): () => number {
  return () => {
    const a = (g.state = (g.state + 0x6d2b79f5) >>> 0);
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SamplingOptions {
  /** 0 (or below) = greedy. */
  temperature?: number;
  topP?: number;
  /** 0 = off. */
  topK?: number;
  seed?: number;
}

/** A sampler's settings and its generator's state: plain data, so the inference thread can draw for it too. */
export interface SamplerState {
  temperature: number;
  topK: number;
  topP: number;
  /** mulberry32's state, advanced by every draw. */
  state: number;
}

/**
 * A sampler processor; `draw` picks the token without masking the other logits (the batch decoder's path).
 * `sampler` is its state as data: the batch decoder hands it to the inference thread for steps run ahead
 * (`drawWith`) and takes the advanced state back.
 */
export type SamplerProcessor = LogitsProcessorFn & { draw: (data: Float32Array) => number; sampler: SamplerState };

/** Returns undefined for greedy decoding (transformers.js' argmax does it). */
export function createSamplerProcessor(o: SamplingOptions): SamplerProcessor | undefined {
  const temperature = o.temperature ?? 1;
  if (!(temperature > 0)) return undefined;
  const topK = Math.max(0, Math.floor(o.topK ?? 0));
  const sampler: SamplerState = { temperature, topK, topP: o.topP ?? 1, state: (o.seed ?? Math.random() * 2 ** 32) >>> 0 };
  const scratch = newScratch();
  const draw = (data: Float32Array) => drawWith(data, sampler, scratch);
  return Object.assign((_ids: bigint[][], logits: LogitsLike) => {
    const data = logits.data as Float32Array;
    const pick = draw(data);
    data.fill(-Infinity);
    data[pick] = 0;
    return logits;
  }, { draw, sampler });
}

/** The token `s` draws from `data`, advancing its state: the same draw wherever it runs. */
export function drawWith(data: Float32Array, s: SamplerState, scratch?: Scratch): number {
  return sampleIndex(data, s.temperature, s.topK, s.topP, randomOver(s), scratch);
}

/**
 * A processor that never lets `ids` be chosen (a client's "ignore EOS", a benchmark's fixed length). It says so
 * as data too (`suppress`), so the batch decoder can run greedy steps ahead in its inference thread.
 */
export type SuppressProcessor = LogitsProcessorFn & { suppress: readonly number[] };

export function suppressTokens(ids: readonly number[]): SuppressProcessor {
  return Object.assign((_ids: bigint[][], logits: LogitsLike) => {
    const data = logits.data as Float32Array;
    for (const id of ids) data[id] = -Infinity;
    return logits;
  }, { suppress: [...ids] });
}

/** Index of the largest entry (the first of equals; 0 when none is above -Infinity). NaN is never chosen. */
export function argmax(data: Float32Array): number {
  // four running maxima: independent comparisons the CPU overlaps (about twice the speed of one chain)
  let m0 = -Infinity, m1 = -Infinity, m2 = -Infinity, m3 = -Infinity;
  const n4 = data.length & ~3;
  for (let i = 0; i < n4; i += 4) {
    const a = data[i]!, b = data[i + 1]!, c = data[i + 2]!, d = data[i + 3]!;
    if (a > m0) m0 = a;
    if (b > m1) m1 = b;
    if (c > m2) m2 = c;
    if (d > m3) m3 = d;
  }
  let max = Math.max(m0, m1, m2, m3);
  for (let i = n4; i < data.length; i++) if (data[i]! > max) max = data[i]!;
  return max === -Infinity ? 0 : data.indexOf(max);
}

/**
 * A token's weight below e^-CUTOFF of the largest is left out of the draw: 150k of them hold under 2e-11 of
 * the mass, below the 2^-32 steps of the random numbers that draw.
 */
const CUTOFF = 40;

/** 2^-k for k = 0 … 63, and 2^(j/256) for j = 0 … 255: the integer and the table part of expNeg's exponent. */
const POW2_NEG = Float64Array.from({ length: 64 }, (_, k) => 2 ** -k);
export const POW2_FRAC = Float64Array.from({ length: 256 }, (_, j) => 2 ** (j / 256));

/**
 * e^x for -CUTOFF ≤ x ≤ 0, as 2^(k/256) · e^f (k an integer, |f| ≤ ln 2 / 512), 2^(k/256) from the tables and
 * e^f's Taylor series to f^3: relative error under 1e-12, finer than the float32 logits it weighs. Math.exp
 * costs about 20 ns here, and a sampler without top-k weighs the whole vocabulary every token (a degree-7
 * series without the table: 1.4x this one's time).
 */
export function expNeg(x: number): number {
  const y = x * (256 * Math.LOG2E);
  const k = Math.floor(y + 0.5); // Math.round is several times slower in V8
  const f = (y - k) * (Math.LN2 / 256);
  const e = k >> 8; // k / 256 rounded down, an integer of at most 0
  return -e < 64 ? (1 + f * (1 + f * (0.5 + f * (1 / 6)))) * POW2_FRAC[k & 255]! * POW2_NEG[-e]! : 0;
}

/** Top-p's buckets over a range of logits. */
const BUCKETS = 1024;

/** Buffers a sampler reuses from token to token, grown as needed. */
export interface Scratch {
  /** Top-k's tokens (index order), their logits and weights. */
  idx: Int32Array;
  val: Float32Array;
  w: Float64Array;
  /** Without top-k: every token's weight (0 below the cutoff) and top-p bucket, by token id. */
  dense: Float64Array;
  bucket: Uint16Array;
  /** The candidates still in the bucket top-p looks into, each bucket's mass. */
  members: Int32Array;
  mass: Float64Array;
}
export const newScratch = (): Scratch => ({
  idx: new Int32Array(1024),
  val: new Float32Array(1024),
  w: new Float64Array(1024),
  dense: new Float64Array(0),
  bucket: new Uint16Array(0),
  members: new Int32Array(0),
  mass: new Float64Array(BUCKETS),
});
const grow = (s: Scratch, need: number) => {
  if (s.idx.length >= need) return;
  const n = Math.max(need, s.idx.length * 2);
  const idx = new Int32Array(n), val = new Float32Array(n);
  idx.set(s.idx), val.set(s.val);
  Object.assign(s, { idx, val, w: new Float64Array(n) });
};

/**
 * What `weigh` leaves for the draw. `dense`: the scratch's `dense` holds every token's weight, and a token is
 * kept when it sorts at or before (endVal, endIdx) (value desc, index asc); else the top-k tokens in
 * idx/val/w [0, m), the left-out ones weighing 0. `z`: the kept tokens' weight.
 */
interface Weighed {
  best: number;
  z: number;
  dense: boolean;
  m: number;
  endVal: number;
  endIdx: number;
}

/** Whether a token (logit v, index i) sorts at or before (endVal, endIdx): value desc, index asc. */
const keeps = (v: number, i: number, endVal: number, endIdx: number) => v > endVal || (v === endVal && i <= endIdx);

/**
 * The draw: r less each kept token's weight (w not 0, `keeps`) in index order, the token where it reaches 0 or
 * below; else the last kept one (rounding left r above 0); -1 where none is. The native kernels' where they load
 * (the same token: test/runtime/kernels.test.ts), else here (`script`: here always).
 */
export function drawKept(data: Float32Array, w: Float64Array, endVal: number, endIdx: number, r: number, script = false): number {
  const native = script ? undefined : nativeKernels()?.drawKept;
  if (native) return native(data, w, endVal, endIdx, r);
  let last = -1;
  for (let i = 0; i < data.length; i++) {
    const wi = w[i]!;
    if (wi === 0 || !keeps(data[i]!, i, endVal, endIdx)) continue;
    last = i;
    r -= wi;
    if (r <= 0) return i;
  }
  return last;
}

/**
 * The indices i with at[i] === b, in order, into members; how many. The native kernels' where they load, else here
 * (`script`: here always).
 */
export function bucketMembers(at: Uint16Array, b: number, members: Int32Array, script = false): number {
  const native = script ? undefined : nativeKernels()?.bucketMembers;
  if (native) return native(at, b, members);
  let m = 0;
  for (let i = 0; i < at.length; i++) if (at[i] === b) members[m++] = i;
  return m;
}

/**
 * Temperature → top-k → top-p → draw, as sorting the vocabulary by logit (ties by index) would, without
 * sorting it: top-k keeps a heap of k while reading the logits once; without it, the tokens within CUTOFF of
 * the largest weight are the candidates, weighed in one pass that also buckets them for top-p. Top-p sorts
 * only the tokens that share the nucleus' boundary (the others are bucketed by logit). The draw walks the kept
 * tokens in index order.
 */
export function sampleIndex(
  data: Float32Array,
  temperature: number,
  topK: number,
  topP: number,
  rand: () => number,
  s: Scratch = newScratch(),
): number {
  const k = weigh(data, temperature, topK, topP, s);
  let r = rand() * k.z;
  if (k.dense) {
    const i = drawKept(data, s.dense, k.endVal, k.endIdx, r);
    return i < 0 ? k.best : i;
  }
  const { idx, w } = s;
  for (let j = 0; j < k.m; j++) {
    if (w[j] === 0) continue;
    r -= w[j]!;
    if (r <= 0) return idx[j]!;
  }
  for (let j = k.m - 1; j >= 0; j--) if (w[j]! > 0) return idx[j]!; // rounding left r above 0: the last kept
  return k.best;
}

/** The tokens a draw can return, in index order. */
export function keptTokens(data: Float32Array, temperature: number, topK: number, topP: number): number[] {
  const s = newScratch();
  const k = weigh(data, temperature, topK, topP, s);
  if (k.dense) return [...data.keys()].filter((i) => s.dense[i]! > 0 && keeps(data[i]!, i, k.endVal, k.endIdx));
  return [...s.idx.subarray(0, k.m)].filter((_, j) => s.w[j]! > 0);
}

/** A candidate's weight: e^((v - max) / temperature). */
const weight = (x: number) => x >= -CUTOFF ? expNeg(x) : Math.exp(x);

function weigh(data: Float32Array, temperature: number, topK: number, topP: number, s: Scratch): Weighed {
  const best = (nativeKernels()?.argmax ?? argmax)(data); // the addon's: the same index, ~10x faster
  const max = data[best]!;
  const all = { best, z: 0, dense: false, m: 0, endVal: -Infinity, endIdx: Infinity };
  if (!(max > -Infinity)) return all;
  const floor = max - CUTOFF * temperature;
  const inv = 1 / temperature;
  if (!(topK > 0 && topK < data.length)) return weighAll(data, max, floor, inv, topP, s, { ...all, dense: true });
  const m = largest(data, topK, s);
  const { idx, val, w } = s;
  let z = 0;
  for (let j = 0; j < m; j++) z += w[j] = weight((val[j]! - max) * inv);
  if (topP < 1) {
    // a candidate stays when it sorts (value desc, index asc) at or before the nucleus' last token
    const members = growMembers(s, m);
    for (let j = 0; j < m; j++) members[j] = j;
    const [endVal, endIdx] = nucleusEnd(val, idx, w, members, m, max, floor, 0, topP * z, s.mass);
    z = 0;
    for (let j = 0; j < m; j++) {
      const v = val[j]!;
      if (v > endVal || (v === endVal && idx[j]! <= endIdx)) z += w[j]!;
      else w[j] = 0;
    }
  }
  return { ...all, z, m };
}

const growMembers = (s: Scratch, n: number) => s.members.length >= n ? s.members : (s.members = new Int32Array(n));

/**
 * Each token's weight e^((v - max) · inv) into w (0 below `floor`), and their sum; with `at` and `mass`, each
 * candidate's bucket (mass.length of them over max .. floor; that count for the others) and each bucket's weight
 * too. The native kernels' `weigh` where they load (the same bits: test/runtime/kernels.test.ts; 0.2-0.35x the
 * time on AVX2), else here (`script`: here always). Every candidate's x is at least -CUTOFF but for rounding,
 * which expNeg takes as it is.
 */
export function weighEach(
  data: Float32Array,
  w: Float64Array,
  max: number,
  floor: number,
  inv: number,
  at?: Uint16Array,
  mass?: Float64Array,
  script = false,
): number {
  const native = script ? undefined : nativeKernels()?.weigh;
  if (native) return native(data, max, floor, inv, w, POW2_FRAC, at, mass);
  const n = data.length;
  let z = 0;
  if (!at || !mass) {
    for (let i = 0; i < n; i++) {
      const v = data[i]!;
      z += w[i] = v >= floor ? expNeg((v - max) * inv) : 0;
    }
    return z;
  }
  const B = mass.length, scale = B / (max - floor);
  mass.fill(0);
  for (let i = 0; i < n; i++) {
    const v = data[i]!;
    if (v >= floor) {
      const x = expNeg((v - max) * inv);
      const q = ((max - v) * scale) | 0; // Math.floor of a value ≥ 0, as an integer
      const b = q < B ? q : B - 1;
      w[i] = x;
      z += x;
      at[i] = b;
      mass[b] += x;
    } else (w[i] = 0), (at[i] = B);
  }
  return z;
}

/**
 * Without top-k: every token's weight into `dense` (0 below `floor`) in one pass, which with top-p also buckets
 * the candidates by logit (BUCKETS over max .. floor) and sums each bucket's weight; then only the bucket where
 * the nucleus ends is looked into.
 */
function weighAll(data: Float32Array, max: number, floor: number, inv: number, topP: number, s: Scratch, k: Weighed): Weighed {
  const n = data.length;
  if (s.dense.length < n) (s.dense = new Float64Array(n)), (s.bucket = new Uint16Array(n));
  const { dense, bucket: at, mass } = s;
  if (topP >= 1) return { ...k, z: weighEach(data, dense, max, floor, inv) };
  const z = weighEach(data, dense, max, floor, inv, at, mass);
  const B = BUCKETS, target = topP * z;
  let b = 0, cum = 0;
  while (b < B - 1 && cum + mass[b]! < target) cum += mass[b++]!;
  const members = growMembers(s, n);
  const m = bucketMembers(at.subarray(0, n), b, members);
  let top = -Infinity, bottom = Infinity;
  for (let q = 0; q < m; q++) {
    const v = data[members[q]!]!;
    if (v > top) top = v;
    if (v < bottom) bottom = v;
  }
  if (!m) return { ...k, z }; // rounding never reached the target: keep them all
  const [endVal, endIdx, kept] = nucleusEnd(data, undefined, dense, members, m, top, bottom, cum, target, mass);
  // (-Infinity: rounding never reached the target, all kept)
  return { ...k, z: endVal === -Infinity ? z : kept, endVal, endIdx };
}

/**
 * The k largest finite logits (of equal ones, the lowest indices), in index order, into the scratch;
 * returns how many. A min-heap of k read against every logit: most fail the one comparison with its top.
 */
function largest(data: Float32Array, k: number, s: Scratch): number {
  grow(s, k);
  const { idx: hi, val: hv } = s;
  // heap order: lower value first; of equal values the higher index (the one to give up first)
  const below = (a: number, b: number) => hv[a]! < hv[b]! || (hv[a] === hv[b] && hi[a]! > hi[b]!);
  const sift = (at: number, size: number) => {
    for (;;) {
      const l = 2 * at + 1, r = l + 1;
      let low = at;
      if (l < size && below(l, low)) low = l;
      if (r < size && below(r, low)) low = r;
      if (low === at) return;
      const v = hv[at]!, i = hi[at]!;
      (hv[at] = hv[low]!), (hi[at] = hi[low]!), (hv[low] = v), (hi[low] = i);
      at = low;
    }
  };
  let size = 0;
  let top = -Infinity; // the heap's lowest once it holds k (-Infinity and NaN never pass it)
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (!(v > top)) continue;
    if (size < k) {
      // fill: append, then restore the heap upwards
      let at = size++;
      (hv[at] = v), (hi[at] = i);
      while (at > 0) {
        const up = (at - 1) >> 1;
        if (!below(at, up)) break;
        const uv = hv[up]!, ui = hi[up]!;
        (hv[up] = hv[at]!), (hi[up] = hi[at]!), (hv[at] = uv), (hi[at] = ui);
        at = up;
      }
      if (size === k) top = hv[0]!;
    } else {
      (hv[0] = v), (hi[0] = i);
      sift(0, size);
      top = hv[0]!;
    }
  }
  // back to index order (the draw's order)
  const order = Array.from({ length: size }, (_, j) => j).sort((a, b) => hi[a]! - hi[b]!);
  const vs = order.map((j) => hv[j]!), is = order.map((j) => hi[j]!);
  for (let j = 0; j < size; j++) (hv[j] = vs[j]!), (hi[j] = is[j]!);
  return size;
}

/**
 * The last token (value, index) of the shortest prefix, in (value desc, index asc) order, holding `target`
 * of the weight, and that prefix's weight. The candidates `members` [0, n) (indices into val, w and idx, which
 * is the identity when absent), with values in lo .. hi, follow tokens holding `cum` of the weight. They are
 * bucketed by value and only the bucket where the mass crosses `target` is looked into: bucketed again over its
 * own range while it is large (logits of a flat distribution crowd into few buckets), then sorted.
 */
function nucleusEnd(
  val: Float32Array,
  idx: Int32Array | undefined,
  w: Float64Array,
  members: Int32Array,
  n: number,
  hi: number,
  lo: number,
  cum: number,
  target: number,
  mass: Float64Array,
): [number, number, number] {
  const B = BUCKETS;
  while (n > 256 && hi > lo) {
    const scale = B / (hi - lo);
    mass.fill(0);
    for (let q = 0; q < n; q++) {
      const j = members[q]!;
      mass[Math.min(B - 1, Math.floor((hi - val[j]!) * scale))] += w[j]!;
    }
    let b = 0;
    while (b < B - 1 && cum + mass[b]! < target) cum += mass[b++]!;
    let kept = 0;
    let top = -Infinity, bottom = Infinity;
    for (let q = 0; q < n; q++) {
      const j = members[q]!;
      if (Math.min(B - 1, Math.floor((hi - val[j]!) * scale)) !== b) continue;
      members[kept++] = j;
      if (val[j]! > top) top = val[j]!;
      if (val[j]! < bottom) bottom = val[j]!;
    }
    if (!kept) return [-Infinity, Infinity, cum]; // rounding never reached the target: keep them all
    if (kept === n && top === hi && bottom === lo) break; // cannot split further
    (n = kept), (hi = top), (lo = bottom);
  }
  const id = (j: number) => idx ? idx[j]! : j;
  const inB = Array.from(members.subarray(0, n)).sort((x, y) => val[y]! - val[x]! || id(x) - id(y));
  let end = inB[inB.length - 1]!;
  for (const j of inB) {
    cum += w[j]!;
    if (cum >= target) {
      end = j;
      break;
    }
  }
  return [val[end]!, id(end), cum];
}
