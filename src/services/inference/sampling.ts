/**
 * Logits processors in transformers.js' calling convention: `(input_ids: bigint[][], logits: Tensor)`,
 * modifying `logits.data` in place (batch size 1). Plain functions: LogitsProcessorList just calls them.
 *
 * Sampling is done here, not by transformers.js, because its sampler has no per-request seed: the
 * sampler processor picks a token with a seeded PRNG and masks every other logit, so transformers.js'
 * greedy step selects exactly that token.
 */

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
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
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

/** Returns undefined for greedy decoding (transformers.js' argmax does it). */
export function createSamplerProcessor(o: SamplingOptions): LogitsProcessorFn | undefined {
  const temperature = o.temperature ?? 1;
  if (!(temperature > 0)) return undefined;
  const rand = seededRandom(o.seed ?? (Math.random() * 2 ** 32) >>> 0);
  const topK = Math.max(0, Math.floor(o.topK ?? 0));
  const topP = o.topP ?? 1;
  return (_ids, logits) => {
    const data = logits.data as Float32Array;
    const pick = sampleIndex(data, temperature, topK, topP, rand);
    data.fill(-Infinity);
    data[pick] = 0;
    return logits;
  };
}

/** Temperature → top-k → top-p → draw, without sorting the whole vocabulary (150k entries on real LLMs). */
export function sampleIndex(data: Float32Array, temperature: number, topK: number, topP: number, rand: () => number): number {
  const n = data.length;
  let max = -Infinity;
  let argmax = 0;
  for (let i = 0; i < n; i++) if (data[i] > max) (max = data[i]), (argmax = i);
  if (max === -Infinity) return argmax;
  const w = (i: number) => Math.exp((data[i] - max) / temperature);
  let cand: number[];
  if (topK > 0 && topK < n) {
    const kth = kthLargest(data, topK);
    cand = [];
    for (let i = 0; i < n && cand.length < topK; i++) if (data[i] >= kth && data[i] > -Infinity) cand.push(i);
  } else {
    cand = [];
    for (let i = 0; i < n; i++) if (data[i] > -Infinity) cand.push(i);
  }
  let z = 0;
  for (const i of cand) z += w(i);
  if (topP < 1) {
    // Tokens with weight ≥ t all precede any token below t in sorted order, so once such a set holds
    // top_p of the mass, the nucleus lies inside it: sort only that set.
    let sel: number[] = cand;
    for (let t = 0.5; t > 1e-30; t /= 16) {
      sel = cand.filter((i) => w(i) >= t);
      let mass = 0;
      for (const i of sel) mass += w(i);
      if (mass >= topP * z) break;
      sel = cand;
    }
    sel.sort((a, b) => data[b] - data[a] || a - b);
    const out: number[] = [];
    let cum = 0;
    for (const i of sel) {
      out.push(i);
      cum += w(i);
      if (cum >= topP * z) break;
    }
    cand = out;
    z = cum;
  }
  let r = rand() * z;
  for (const i of cand) {
    r -= w(i);
    if (r <= 0) return i;
  }
  return cand[cand.length - 1] ?? argmax;
}

function kthLargest(data: Float32Array, k: number): number {
  // quickselect on a copy: O(n), no full sort
  const a = Float32Array.from(data);
  let lo = 0;
  let hi = a.length - 1;
  const target = k - 1;
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else break;
  }
  return a[target];
}
