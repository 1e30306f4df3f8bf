/**
 * Feature extraction: pooled, optionally normalised sentence vectors. An input longer than the model's
 * window is cut into windows of raw tokens (each wrapped in the model's own special tokens), embedded
 * separately, and the chunk vectors are mean-pooled and renormalised, so no text is silently dropped.
 */
import type { LoadedModel } from './load.ts';
import type { PoolingMode } from './model-files.ts';
import { tokenizeOffLoop } from './tokenize-off-loop.ts';

export interface EmbedOptions {
  /** Cut over-long inputs to the window instead of chunking them. */
  truncate?: boolean;
  /** Override the model's normalisation setting. */
  normalize?: boolean;
  /** Sequences per session run. */
  batchSize?: number;
  signal?: AbortSignal;
}

export interface EmbedResult {
  vectors: number[][];
  /** Tokens per input (all chunks, special tokens included). */
  tokens: number[];
  /** Chunks per input (1 unless the input was longer than the window). */
  chunks: number[];
}

type Tok = (text: string | string[], o?: Record<string, unknown>) => { input_ids: { tolist(): bigint[][] } };

export async function embedTexts(m: LoadedModel, texts: string[], o: EmbedOptions = {}): Promise<EmbedResult> {
  const { prefix, suffix } = specialWrap(m);
  const window = m.maxTokens - prefix.length - suffix.length;
  const tok = m.tokenizer as unknown as Tok;
  const seqs: number[][] = [];
  const owner: number[] = [];
  const tokens: number[] = [];
  const chunks: number[] = [];
  const ahead = await tokenizeOffLoop(m, texts, false, o.signal);
  texts.forEach((text, i) => {
    const ids = ahead?.[i] ?? tok(text, { add_special_tokens: false }).input_ids.tolist()[0].map(Number);
    const parts = o.truncate ? [ids.slice(0, window)] : chunkTokenIds(ids, window);
    chunks.push(parts.length);
    tokens.push(parts.reduce((n, p) => n + p.length + prefix.length + suffix.length, 0));
    for (const p of parts) {
      seqs.push([...prefix, ...p, ...suffix]);
      owner.push(i);
    }
  });
  const pooled = await poolSequences(m, seqs, o.batchSize ?? 16);
  const normalize = o.normalize ?? m.pooling?.normalize ?? true;
  const vectors = texts.map((_, i) => {
    const mine = pooled.filter((_, j) => owner[j] === i).map((v) => (normalize ? l2normalize(v) : v));
    return mine.length === 1 ? mine[0] : normalize ? meanPoolNormalize(mine) : mean(mine);
  });
  return { vectors, tokens, chunks };
}

/** Split token ids into windows of at most `window` tokens (at least one, possibly empty, chunk). */
export function chunkTokenIds(ids: number[], window: number): number[][] {
  if (window <= 0) throw new Error('model window too small for its special tokens');
  if (ids.length <= window) return [ids];
  const out: number[][] = [];
  for (let i = 0; i < ids.length; i += window) out.push(ids.slice(i, i + window));
  return out;
}

/** Mean of the vectors, renormalised to unit length. */
export function meanPoolNormalize(vectors: number[][]): number[] {
  return l2normalize(mean(vectors));
}

export function l2normalize(v: number[]): number[] {
  const n = Math.hypot(...v) || 1;
  return v.map((x) => x / n);
}

function mean(vectors: number[][]): number[] {
  const out = new Array<number>(vectors[0].length).fill(0);
  for (const v of vectors) for (let i = 0; i < v.length; i++) out[i] += v[i] / vectors.length;
  return out;
}

/** The special tokens the tokenizer wraps one sequence in, learnt by encoding a probe with and without. */
export function specialWrap(m: LoadedModel): { prefix: number[]; suffix: number[] } {
  const tok = m.tokenizer as unknown as Tok;
  const bare = tok('a', { add_special_tokens: false }).input_ids.tolist()[0].map(Number);
  const full = tok('a', { add_special_tokens: true }).input_ids.tolist()[0].map(Number);
  for (let i = 0; i + bare.length <= full.length; i++) {
    if (bare.every((id, k) => full[i + k] === id)) return { prefix: full.slice(0, i), suffix: full.slice(i + bare.length) };
  }
  return { prefix: [], suffix: [] };
}

/** Run sequences through the encoder in padded batches and pool each one. */
async function poolSequences(m: LoadedModel, seqs: number[][], batchSize: number): Promise<number[][]> {
  const mode: PoolingMode = m.pooling?.pooling ?? 'mean';
  const inputNames: string[] = (m.model as unknown as { sessions: { model: { inputNames: string[] } } }).sessions.model.inputNames;
  const pad = Number((m.tokenizer as unknown as { pad_token_id?: number }).pad_token_id ?? 0);
  const out: number[][] = [];
  for (let b = 0; b < seqs.length; b += batchSize) {
    const batch = seqs.slice(b, b + batchSize);
    const len = Math.max(...batch.map((s) => s.length));
    const ids = new BigInt64Array(batch.length * len).fill(BigInt(pad));
    const mask = new BigInt64Array(batch.length * len);
    batch.forEach((s, i) => s.forEach((id, k) => ((ids[i * len + k] = BigInt(id)), (mask[i * len + k] = 1n))));
    const T = m.tf.Tensor;
    const feeds: Record<string, unknown> = {
      input_ids: new T('int64', ids, [batch.length, len]),
      attention_mask: new T('int64', mask, [batch.length, len]),
    };
    if (inputNames.includes('token_type_ids')) {
      feeds.token_type_ids = new T('int64', new BigInt64Array(batch.length * len), [batch.length, len]);
    }
    const res =
      (await (m.model as unknown as (x: unknown) => Promise<Record<string, { data: Float32Array; dims: number[] }>>)(feeds)) as Record<
        string,
        { data: Float32Array; dims: number[] }
      >;
    const hidden = res.last_hidden_state ?? res.token_embeddings ?? Object.values(res)[0];
    const [, seqLen, dim] = hidden.dims;
    batch.forEach((s, i) => out.push(pool(hidden.data, i * seqLen * dim, s.length, dim, mode)));
  }
  return out;
}

function pool(data: Float32Array, base: number, n: number, dim: number, mode: PoolingMode): number[] {
  const row = (t: number) => Array.from(data.subarray(base + t * dim, base + (t + 1) * dim));
  if (mode === 'cls' || mode === 'none') return row(0);
  if (mode === 'last_token') return row(n - 1);
  const out = mode === 'max' ? new Array<number>(dim).fill(-Infinity) : new Array<number>(dim).fill(0);
  for (let t = 0; t < n; t++) {
    for (let d = 0; d < dim; d++) {
      const x = data[base + t * dim + d];
      out[d] = mode === 'max' ? Math.max(out[d], x) : out[d] + x / n;
    }
  }
  return out;
}
