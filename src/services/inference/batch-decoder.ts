/**
 * Continuous batching for decoder-only models: every generation running on one model decodes in one
 * session call per step. A decode step reads every weight once whatever the batch size, so on a
 * memory-bound CPU a batch of 4 costs little more than a batch of 1.
 *
 * A request is prefilled alone (batch 1), then joins the batch between two steps; it leaves when it
 * stops, reaches its token limit or is aborted. Rows have different context lengths: the shared KV cache
 * is left-padded to the longest one and the attention mask hides each row's padding, so a row sees exactly
 * the keys it would see alone. Tokens are chosen per row (its own processors: penalties, constraints,
 * sampling), greedy without copying the vocabulary.
 *
 * The cache is only rebuilt when a row joins or leaves; between those the present outputs of one step
 * are the past inputs of the next, as ONNX Runtime returns them.
 */
import type { LoadedModel } from './load.ts';
import type { LogitsProcessorLike } from './sampling.ts';

export interface DecodeRequest {
  promptIds: number[];
  maxNew: number;
  /** This row's processors, called as transformers.js calls them (ids of the row, logits [1, vocab]). */
  processors: LogitsProcessorLike[];
  /** Each chosen token; return true to end the request here. */
  onToken(token: number): boolean;
  signal: AbortSignal;
}

export interface BatchDecoder {
  /** Resolves when the request ends (stopped, limit, or aborted: then the caller's own abort handling rules). */
  run(req: DecodeRequest): Promise<void>;
  /** Rows decoding now (for tests and metrics). */
  readonly active: number;
}

type Typed = Float32Array | Uint16Array;
interface OrtTensorLike {
  data: unknown;
  dims: readonly number[];
  type: string;
}
interface SessionLike {
  inputNames: readonly string[];
  outputNames: readonly string[];
  run(feeds: Record<string, unknown>): Promise<Record<string, OrtTensorLike>>;
}

interface Row {
  req: DecodeRequest;
  ids: bigint[];
  generated: number;
  /** Padding columns at the left of this row's cache. */
  pad: number;
  done: () => void;
  fail: (e: unknown) => void;
}

interface Cache {
  /** Per past input name: [rows, heads, len, headDim] row-major. */
  data: Map<string, Typed>;
  heads: number;
  headDim: number;
  len: number;
  type: string;
}

const decoders = new WeakMap<LoadedModel, BatchDecoder | null>();

/** The model's batch decoder, or undefined when its graph is not the plain KV-cache decoder this drives. */
export function batchDecoderFor(m: LoadedModel): BatchDecoder | undefined {
  if (!decoders.has(m)) decoders.set(m, supports(m) ? createBatchDecoder(m) : null);
  return decoders.get(m) ?? undefined;
}

function session(m: LoadedModel): SessionLike | undefined {
  return (m.model as unknown as { sessions?: Record<string, SessionLike> }).sessions?.model;
}

function supports(m: LoadedModel): boolean {
  // CPU tensors only, and fp32 caches (an fp16 cache would need its dtype known before the first step)
  if (m.task !== 'text-generation' || (m.device !== 'cpu' && m.device !== 'wasm') || /f16/.test(m.dtype)) return false;
  const s = session(m);
  if (!s) return false;
  const ins = new Set(s.inputNames);
  const past = s.inputNames.filter((n) => n.startsWith('past_key_values.'));
  return ins.has('input_ids') && ins.has('attention_mask') && ins.has('position_ids') && past.length > 0 &&
    ins.size === 3 + past.length && past.every((n) => s.outputNames.includes(n.replace('past_key_values.', 'present.'))) &&
    s.outputNames.includes('logits');
}

function createBatchDecoder(m: LoadedModel): BatchDecoder {
  const s = session(m)!;
  const pastNames = s.inputNames.filter((n) => n.startsWith('past_key_values.'));
  const tensor = (type: string, data: unknown, dims: number[]) =>
    (new m.tf.Tensor(type as never, data as never, dims) as unknown as { ort_tensor: unknown }).ort_tensor;
  const i64 = (xs: ArrayLike<number>, dims: number[]) => tensor('int64', BigInt64Array.from(Array.from(xs, BigInt)), dims);
  const c = m.config as { num_key_value_heads?: number; num_attention_heads?: number; hidden_size?: number; head_dim?: number };
  const heads = Number(c.num_key_value_heads ?? c.num_attention_heads);
  const headDim = Number(c.head_dim ?? Number(c.hidden_size) / Number(c.num_attention_heads));

  const pending: Row[] = [];
  let rows: Row[] = [];
  let cache: Cache | undefined;
  let running = false;

  /** Choose a token from one row of logits: processors in place, then argmax (a sampler leaves one finite entry). */
  const pick = (row: Row, logits: Float32Array): number => {
    let data = logits;
    if (row.req.processors.length) {
      let t = new m.tf.Tensor('float32', logits, [1, logits.length]) as unknown as { data: Float32Array };
      for (const p of row.req.processors) t = ((p as (ids: bigint[][], l: unknown) => unknown)([row.ids], t) ?? t) as typeof t;
      data = t.data;
    }
    let best = 0;
    let max = -Infinity;
    for (let i = 0; i < data.length; i++) if (data[i]! > max) (max = data[i]!), (best = i);
    return best;
  };

  /** Record a token; true when the row is finished. */
  const accept = (row: Row, token: number): boolean => {
    row.ids.push(BigInt(token));
    row.generated++;
    const stop = row.req.onToken(token);
    return stop || row.generated >= row.req.maxNew || row.req.signal.aborted;
  };

  /** Rebuild the cache from `keep` rows of the old cache (and optionally one new batch-1 cache). */
  const repack = (keep: Row[], extra?: { row: Row; past: Map<string, Typed>; len: number; type: string }) => {
    const old = cache;
    const oldIndex = new Map(rows.map((r, i) => [r, i]));
    const minPad = keep.length ? Math.min(...keep.map((r) => r.pad)) : 0;
    const keptLen = old ? old.len - minPad : 0;
    const len = Math.max(keptLen, extra?.len ?? 0);
    const type = old?.type ?? extra!.type;
    const n = keep.length + (extra ? 1 : 0);
    const slab = len * headDim;
    const data = new Map<string, Typed>();
    for (const name of pastNames) {
      const src = old?.data.get(name);
      const ctor = (src ?? extra!.past.get(name)!).constructor as new (n: number) => Typed;
      const out = new ctor(n * heads * slab);
      keep.forEach((r, b) => {
        const o = oldIndex.get(r)!;
        for (let h = 0; h < heads; h++) {
          const from = ((o * heads + h) * old!.len + minPad) * headDim;
          const to = ((b * heads + h) * len + (len - keptLen)) * headDim;
          out.set(src!.subarray(from, from + keptLen * headDim), to);
        }
      });
      if (extra) {
        const e = extra.past.get(name)!;
        for (let h = 0; h < heads; h++) {
          out.set(
            e.subarray(h * extra.len * headDim, (h + 1) * extra.len * headDim),
            ((keep.length * heads + h) * len + (len - extra.len)) * headDim,
          );
        }
      }
      data.set(name, out);
    }
    for (const r of keep) r.pad = r.pad - minPad + (len - keptLen);
    if (extra) extra.row.pad = len - extra.len;
    rows = extra ? [...keep, extra.row] : keep;
    cache = rows.length ? { data, heads, headDim, len, type } : undefined;
  };

  const feedPast = (feeds: Record<string, unknown>, data: Map<string, Typed> | undefined, b: number, len: number, type: string) => {
    for (const name of pastNames) feeds[name] = tensor(type, data?.get(name) ?? new Float32Array(0), [b, heads, len, headDim]);
  };

  const prefill = async (row: Row) => {
    const ids = row.req.promptIds;
    const feeds: Record<string, unknown> = {
      input_ids: i64(ids, [1, ids.length]),
      attention_mask: i64(ids.map(() => 1), [1, ids.length]),
      position_ids: i64(ids.map((_, i) => i), [1, ids.length]),
    };
    feedPast(feeds, undefined, 1, 0, cache?.type ?? 'float32');
    const out = await s.run(feeds);
    const logits = out.logits!;
    const v = logits.dims.at(-1)!;
    const all = logits.data as Float32Array;
    const token = pick(row, all.subarray(all.length - v));
    const past = new Map<string, Typed>();
    let type = 'float32';
    for (const name of pastNames) {
      const p = out[name.replace('past_key_values.', 'present.')]!;
      past.set(name, p.data as Typed);
      type = p.type;
    }
    return { token, past, len: ids.length, type };
  };

  const step = async () => {
    const b = rows.length;
    const len = cache!.len;
    const mask = new Array<number>(b * (len + 1));
    rows.forEach((r, i) => {
      for (let j = 0; j <= len; j++) mask[i * (len + 1) + j] = j < r.pad ? 0 : 1;
    });
    const feeds: Record<string, unknown> = {
      input_ids: tensor('int64', BigInt64Array.from(rows.map((r) => r.ids.at(-1)!)), [b, 1]),
      attention_mask: i64(mask, [b, len + 1]),
      position_ids: i64(rows.map((r) => len - r.pad), [b, 1]),
    };
    feedPast(feeds, cache!.data, b, len, cache!.type);
    const out = await s.run(feeds);
    const all = out.logits!.data as Float32Array;
    const v = out.logits!.dims.at(-1)!;
    const per = all.length / b; // [b, 1, v]: the last position of each row
    for (const name of pastNames) cache!.data.set(name, out[name.replace('past_key_values.', 'present.')]!.data as Typed);
    cache!.len = len + 1;
    const finished = new Set<Row>();
    rows.forEach((r, i) => {
      if (r.req.signal.aborted) return void finished.add(r);
      const token = pick(r, all.subarray(i * per + per - v, (i + 1) * per));
      if (accept(r, token)) finished.add(r);
    });
    return finished;
  };

  const loop = async () => {
    running = true;
    try {
      while (pending.length || rows.length) {
        // join: each waiting request is prefilled alone, then enters the batch
        while (pending.length) {
          const row = pending.shift()!;
          if (row.req.signal.aborted) {
            row.done();
            continue;
          }
          try {
            const p = await prefill(row);
            if (accept(row, p.token)) {
              row.done();
              continue;
            }
            repack(rows, { row, ...p });
          } catch (e) {
            row.fail(e);
          }
        }
        if (!rows.length) continue;
        let finished: Set<Row>;
        try {
          finished = await step();
        } catch (e) {
          // a failed step fails every row of it; the cache is gone with them
          for (const r of rows) r.fail(e);
          rows = [];
          cache = undefined;
          continue;
        }
        if (finished.size) {
          repack(rows.filter((r) => !finished.has(r)));
          for (const r of finished) r.done();
        }
      }
    } finally {
      running = false;
    }
  };

  return {
    get active() {
      return rows.length;
    },
    run(req) {
      return new Promise<void>((done, fail) => {
        pending.push({ req, ids: req.promptIds.map(BigInt), generated: 0, pad: 0, done, fail });
        if (!running) void loop();
      });
    },
  };
}
