/**
 * Continuous batching for decoder-only models: every generation running on one model decodes in one
 * session call per step. A decode step reads every weight once whatever the batch size, so on a
 * memory-bound CPU a batch of 4 costs little more than a batch of 1.
 *
 * Requests waiting when a prefill starts are prefilled together (left-padded), in chunks of
 * `PREFILL_CHUNK_ALONE` tokens between them; while other rows are decoding, the prompt goes in chunks of
 * `PREFILL_CHUNK` tokens with a decode step of the others between chunks, so a joining request never
 * stalls the running streams for its whole prompt. A
 * prefilled row joins the batch between two steps and leaves when it stops, reaches its token limit or is
 * aborted. Rows have different context lengths: the shared KV cache is left-padded to the longest one and
 * the attention mask hides each row's padding, so a row sees exactly the keys it would see alone. Tokens
 * are chosen per row (its own processors: penalties, constraints, sampling), greedy without copying the
 * vocabulary. Graphs with a `num_logits_to_keep` input compute the LM head for the last position only.
 *
 * The KV cache lives in arenas held in the inference thread where the session runs (./ort-thread.ts): a
 * step sends only its token ids, mask and positions and gets back the logits; no cache moves between
 * threads. When the graph names each layer's new keys and values (`new_key_values.*`, added where the
 * session is created: ./new-key-values.ts), the running batch's cache stays in place: it is fed at a fixed
 * capacity per row, the positions past each row's length masked, and only the new positions are fetched and
 * written in at that length. Otherwise (and for a prefill, whose past starts empty) a call reads its past
 * from one arena and ONNX Runtime writes the present (past + new positions, concatenated by the graph)
 * straight into the other (on onnxruntime-web the present is copied in), the two swapping roles each call.
 * Capacities grow geometrically, so a step allocates no cache memory; rows joining or leaving repack once
 * (in that thread too).
 */
import type { LoadedModel } from './load.ts';
import type { HeldArena, SharedArena } from './ort-thread.ts';
import { newKeyValuesOf } from './new-key-values.ts';
import type { DecodedHeld, DecodePlan, HeldAppend, HeldCopy, HeldView } from './ort-sessions.ts';
import { argmax, type LogitsProcessorLike, type SamplerProcessor, type SuppressProcessor } from './sampling.ts';

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

/** Prompt tokens per prefill call while other rows decode (between two of their steps). */
export const PREFILL_CHUNK = 64;

/**
 * Prompt tokens per prefill call (all the group's rows together) while no row decodes. A whole long prompt
 * in one call made each layer's attention hold [rows, heads, prompt, prompt] floats several times over
 * (1 GB for 2,000 tokens of a 0.5B model), and the memory and its page faults cost more than the calls
 * saved: in chunks of 256 the benchmark model's 2,025-token prompt was prefilled in 7.5 s instead of 9.5
 * (docs/models.md, "Continuous batching").
 */
export const PREFILL_CHUNK_ALONE = 256;

/**
 * Greedy decode steps the inference thread runs back to back when every row's choice is plain data (the most
 * likely token, some never chosen): each exchange between the server's thread and the inference thread cost
 * ~0.7 ms a token. A request arriving meanwhile, or a cancellation, ends the run after the current step; a
 * stop found meanwhile wastes at most this many steps (the row's later tokens are dropped).
 */
export const RUN_AHEAD = 4;

interface OrtTensorLike {
  data: unknown;
  dims: readonly number[];
  type: string;
}
/** A session in the inference thread (./ort-thread.ts), with buffers held there between calls. */
interface SessionLike {
  inputNames: readonly string[];
  outputNames: readonly string[];
  hold(lengths: number[]): Promise<HeldArena[]>;
  drop(arenas: HeldArena[]): void;
  runHeld(
    feeds: Record<string, unknown>,
    fetches: Record<string, HeldView>,
    appends?: Record<string, HeldAppend>,
    returned?: string[],
  ): Promise<Record<string, OrtTensorLike>>;
  copyHeld(moves: HeldCopy[]): Promise<void>;
  share?(length: number): Promise<SharedArena>;
  decodeHeld?(plan: DecodePlan): Promise<DecodedHeld>;
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

/**
 * A KV cache of `len` positions for some rows: [rows, heads, stride, headDim] row-major at the start of
 * each arena, the first `len` positions of each row and head filled. `inPlace`: calls append the new
 * positions into `cur` (stride is a capacity); otherwise the present is written into `spare` and the two
 * swap (stride is len).
 */
interface Kv {
  len: number;
  stride: number;
  inPlace: boolean;
  cur: Map<string, HeldArena>;
  spare: Map<string, HeldArena>;
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

const FIXED_INPUTS = ['input_ids', 'attention_mask', 'position_ids'];

function supports(m: LoadedModel): boolean {
  // CPU sessions in the inference thread only, and fp32 caches (the arenas are float32)
  if (m.task !== 'text-generation' || (m.device !== 'cpu' && m.device !== 'wasm') || /f16/.test(m.dtype)) return false;
  const s = session(m);
  if (!s || typeof s.runHeld !== 'function') return false;
  const ins = new Set(s.inputNames);
  const past = s.inputNames.filter((n) => n.startsWith('past_key_values.'));
  const optional = ins.has('num_logits_to_keep') ? 1 : 0;
  return FIXED_INPUTS.every((n) => ins.has(n)) && past.length > 0 && ins.size === 3 + optional + past.length &&
    past.every((n) => s.outputNames.includes(n.replace('past_key_values.', 'present.'))) && s.outputNames.includes('logits');
}

function createBatchDecoder(m: LoadedModel): BatchDecoder {
  const s = session(m)!;
  const pastNames = s.inputNames.filter((n) => n.startsWith('past_key_values.'));
  const presentOf = new Map(pastNames.map((n) => [n, n.replace('past_key_values.', 'present.')]));
  const keepLast = s.inputNames.includes('num_logits_to_keep');
  const tensor = (type: string, data: unknown, dims: number[]) =>
    (new m.tf.Tensor(type as never, data as never, dims) as unknown as { ort_tensor: unknown }).ort_tensor;
  const c = m.config as { num_key_value_heads?: number; num_attention_heads?: number; hidden_size?: number; head_dim?: number };
  const heads = Number(c.num_key_value_heads ?? c.num_attention_heads);
  const headDim = Number(c.head_dim ?? Number(c.hidden_size) / Number(c.num_attention_heads));

  const pending: Row[] = [];
  let rows: Row[] = [];
  let main: Kv | undefined;
  let running = false;

  const newOf = new Map(pastNames.map((n) => [n, newKeyValuesOf(presentOf.get(n)!)]));
  const inPlace = pastNames.every((n) => s.outputNames.includes(newOf.get(n)!));
  /** Positions per row of an in-place cache holding `len`: room for some steps before it is laid out again. */
  const capacity = (len: number) => len + 32 + (len >> 3);

  /** Vocabulary size, from the first logits; and the decode steps' logits, written by the thread into shared memory. */
  let vocab = 0;
  let stepLogits: SharedArena | undefined;
  /** Shared room for `b` rows of logits (no buffer crosses threads per step: see ./ort-sessions.ts `share`). */
  const logitsFor = async (b: number): Promise<SharedArena | undefined> => {
    if (!s.share || !vocab) return undefined;
    if ((stepLogits?.length ?? 0) < b * vocab) {
      if (stepLogits) s.drop([stepLogits]);
      stepLogits = await s.share(Math.max(b, 4) * vocab);
    }
    return stepLogits;
  };

  const newKv = (place = false): Kv => ({ len: 0, stride: 0, inPlace: place, cur: new Map(), spare: new Map() });
  /** Frees a cache's arenas in the thread. */
  const dropKv = (kv: Kv | undefined) => kv && s.drop([...kv.cur.values(), ...kv.spare.values()]);

  /**
   * Arenas of at least `need` floats in `map` (new ones, zeroed, `slack` times larger, where too small).
   * With `keep`, each replaced arena's first `keep` floats are copied over; the replaced ones are dropped.
   */
  const ensure = async (map: Map<string, HeldArena>, need: number, slack: number, keep = 0) => {
    const grow = pastNames.filter((name) => (map.get(name)?.length ?? -1) < need);
    if (!grow.length) return;
    const fresh = await s.hold(grow.map(() => Math.ceil(need * slack)));
    const moves: HeldCopy[] = [];
    const old: HeldArena[] = [];
    grow.forEach((name, i) => {
      const o = map.get(name);
      if (o) old.push(o);
      if (o && keep) moves.push({ from: o.id, fromOffset: 0, length: Math.min(keep, o.length), to: fresh[i]!.id, toOffset: 0 });
      map.set(name, fresh[i]!);
    });
    await s.copyHeld(moves);
    s.drop(old);
  };

  /** Lays an in-place cache of `b` rows out again with room for `len` positions per row (its contents kept). */
  const widen = async (kv: Kv, b: number, len: number) => {
    const stride = capacity(len);
    const fresh = await s.hold(pastNames.map(() => b * heads * stride * headDim));
    const moves: HeldCopy[] = [];
    pastNames.forEach((name, i) => {
      const from = kv.cur.get(name);
      if (!from || !kv.len) return;
      for (let r = 0; r < b * heads; r++) {
        moves.push({
          from: from.id,
          fromOffset: r * kv.stride * headDim,
          length: kv.len * headDim,
          to: fresh[i]!.id,
          toOffset: r * stride * headDim,
        });
      }
    });
    await s.copyHeld(moves);
    s.drop([...kv.cur.values()]);
    pastNames.forEach((name, i) => kv.cur.set(name, fresh[i]!));
    kv.stride = stride;
  };

  /**
   * One session call over `b` rows of `q` new tokens each on top of `kv` (advanced by q). `mask` covers the
   * `kv.len` cached positions and the q new ones of each row. Returns each row's last-position logits.
   */
  const forward = async (kv: Kv, b: number, ids: BigInt64Array, mask: BigInt64Array, pos: BigInt64Array): Promise<Float32Array[]> => {
    const q = ids.length / b;
    const len = kv.len;
    const total = len + q;
    const feeds: Record<string, unknown> = {
      input_ids: tensor('int64', ids, [b, q]),
      position_ids: tensor('int64', pos, [b, q]),
    };
    if (keepLast) feeds.num_logits_to_keep = tensor('int64', BigInt64Array.of(1n), []);
    const view = (a: HeldArena, positions: number): HeldView => ({
      held: a.id,
      offset: 0,
      length: b * heads * positions * headDim,
      dims: [b, heads, positions, headDim],
    });
    let out: Record<string, OrtTensorLike>;
    if (kv.inPlace) {
      if (kv.stride < total) await widen(kv, b, total);
      // the whole capacity is fed, the positions past this length masked; the new ones come after it
      const wide = new BigInt64Array(b * (kv.stride + q));
      for (let i = 0; i < b; i++) {
        wide.set(mask.subarray(i * total, i * total + len), i * (kv.stride + q));
        wide.set(mask.subarray(i * total + len, (i + 1) * total), i * (kv.stride + q) + kv.stride);
      }
      feeds.attention_mask = tensor('int64', wide, [b, kv.stride + q]);
      const appends: Record<string, HeldAppend> = {};
      for (const name of pastNames) {
        feeds[name] = view(kv.cur.get(name)!, kv.stride);
        appends[newOf.get(name)!] = { held: kv.cur.get(name)!.id, stride: kv.stride, at: len };
      }
      const shared = q === 1 ? await logitsFor(b) : undefined;
      const fetches: Record<string, HeldView> = shared
        ? { logits: { held: shared.id, offset: 0, length: b * vocab, dims: [b, 1, vocab] } }
        : {};
      out = await s.runHeld(feeds, fetches, appends, shared ? [] : ['logits']);
      if (shared) out.logits = { data: shared.data.subarray(0, b * vocab), dims: [b, 1, vocab], type: 'float32' };
    } else {
      const need = b * heads * total * headDim;
      await ensure(kv.cur, need, 1.5, b * heads * len * headDim);
      await ensure(kv.spare, need, 1.5);
      feeds.attention_mask = tensor('int64', mask, [b, total]);
      const fetches: Record<string, HeldView> = {};
      for (const name of pastNames) {
        feeds[name] = view(kv.cur.get(name)!, len);
        fetches[presentOf.get(name)!] = view(kv.spare.get(name)!, total);
      }
      out = await s.runHeld(feeds, fetches);
      for (const name of pastNames) {
        const spare = kv.spare.get(name)!;
        kv.spare.set(name, kv.cur.get(name)!);
        kv.cur.set(name, spare);
      }
      kv.stride = total;
    }
    kv.len = total;
    const logits = out.logits!;
    const v = vocab = logits.dims.at(-1)!;
    const all = logits.data as Float32Array;
    const per = all.length / b; // [b, positions, v]: the last position of each row
    return Array.from({ length: b }, (_, i) => all.subarray(i * per + per - v, (i + 1) * per));
  };

  /** Choose a token from one row of logits: processors in place, then a trailing sampler's draw, else argmax. */
  const pick = (row: Row, logits: Float32Array): number => {
    let data = logits;
    const procs = row.req.processors;
    // a sampler last draws its token itself, without masking the rest for an argmax to find it
    const sampler = (procs.at(-1) as Partial<SamplerProcessor> | undefined)?.draw;
    const n = sampler ? procs.length - 1 : procs.length;
    if (n) {
      let t = new m.tf.Tensor('float32', logits, [1, logits.length]) as unknown as { data: Float32Array };
      for (let i = 0; i < n; i++) t = ((procs[i] as (ids: bigint[][], l: unknown) => unknown)([row.ids], t) ?? t) as typeof t;
      data = t.data;
    }
    return sampler ? sampler(data) : argmax(data);
  };

  /** Record a token; true when the row is finished. */
  const accept = (row: Row, token: number): boolean => {
    row.ids.push(BigInt(token));
    row.generated++;
    const stop = row.req.onToken(token);
    return stop || row.generated >= row.req.maxNew || row.req.signal.aborted;
  };

  /**
   * Make `main` hold `keep` (rows of main) followed by `join` (rows of `from`), each with its padding trimmed
   * to what the longest context needs. Written into main's spare arena (or a new one), then swapped in.
   */
  const repack = async (keep: Row[], join: Row[] = [], from?: Kv) => {
    const index = new Map(rows.map((r, i) => [r, i]));
    const src = [
      ...keep.map((r) => ({ r, kv: main!, i: index.get(r)! })),
      ...join.map((r, i) => ({ r, kv: from!, i })),
    ];
    const real = src.map(({ r, kv }) => kv.len - r.pad);
    const len = Math.max(0, ...real);
    const kv = main ?? newKv(inPlace);
    const stride = kv.inPlace ? capacity(len + 1) : len;
    const moves: HeldCopy[] = [];
    try {
      await ensure(kv.spare, src.length * heads * stride * headDim, kv.inPlace ? 1 : 1.5);
      for (const name of pastNames) {
        const out = kv.spare.get(name)!;
        src.forEach(({ kv: from, i }, b) => {
          const data = from.cur.get(name)!;
          const n = real[b]! * headDim;
          for (let h = 0; h < heads; h++) {
            moves.push({
              from: data.id,
              fromOffset: ((i * heads + h) * from.stride + from.len - real[b]!) * headDim,
              length: n,
              to: out.id,
              toOffset: ((b * heads + h) * stride + len - real[b]!) * headDim,
            });
          }
        });
        const prev = kv.cur.get(name);
        if (prev) kv.spare.set(name, prev);
        else kv.spare.delete(name);
        kv.cur.set(name, out);
      }
      await s.copyHeld(moves);
    } catch (e) {
      // the cache is gone with the thread, or cannot grow: every row it held fails
      for (const { r } of src) r.fail(e);
      rows = [];
      dropKv(kv);
      main = undefined;
      return;
    }
    kv.len = len;
    kv.stride = stride;
    src.forEach(({ r }, b) => (r.pad = len - real[b]!));
    rows = src.map((x) => x.r);
    main = rows.length ? kv : (dropKv(kv), undefined);
  };

  /**
   * Set when the inference thread should end a run of steps ahead early: a request is waiting to join, or a
   * row was cancelled (shared memory, read by the thread between steps).
   */
  const interrupt = new Int32Array(new SharedArrayBuffer(4));

  /**
   * A row's choice as data, where its processors are only that: tokens it never takes, then at most a sampler
   * (no penalty or constraint, which are code).
   */
  const asData = (row: Row): { suppress: number[]; sampler: SamplerProcessor | null } | undefined => {
    const procs = row.req.processors as (Partial<SuppressProcessor> & Partial<SamplerProcessor>)[];
    const last = procs.at(-1);
    const sampler = last?.sampler && last.draw ? (last as SamplerProcessor) : null;
    const rest = sampler ? procs.slice(0, -1) : procs;
    return rest.every((p) => Array.isArray(p.suppress)) ? { suppress: rest.flatMap((p) => [...p.suppress!]), sampler } : undefined;
  };

  /**
   * Up to RUN_AHEAD steps of every row in the inference thread, where that can be (the cache in place, every
   * row's choice plain data, no request waiting to join); undefined where it cannot. A sampler's state goes
   * with the plan and comes back advanced by its draws there.
   */
  const stepAhead = async (alone: boolean): Promise<Set<Row> | undefined> => {
    // cleared before `pending` is read: a request arriving from here on sets it again
    Atomics.store(interrupt, 0, 0);
    const kv = main!;
    const steps = Math.min(RUN_AHEAD, ...rows.map((r) => r.req.maxNew - r.generated));
    const choices = rows.map(asData);
    if (!alone || steps < 2 || !kv.inPlace || !s.decodeHeld || pending.length || choices.some((x) => !x)) return undefined;
    const b = rows.length;
    const shared = await logitsFor(b);
    if (!shared) return undefined;
    if (kv.stride < kv.len + steps) await widen(kv, b, kv.len + steps);
    const { tokens: chosen, samplers } = await s.decodeHeld({
      tokens: rows.map((r) => Number(r.ids.at(-1)!)),
      pads: rows.map((r) => r.pad),
      len: kv.len,
      stride: kv.stride,
      steps,
      past: pastNames.map((name) => ({
        name,
        held: kv.cur.get(name)!.id,
        dims: [b, heads, kv.stride, headDim],
        output: newOf.get(name)!,
      })),
      logits: { held: shared.id, offset: 0, length: b * vocab, dims: [b, 1, vocab] },
      keepLast,
      suppress: choices.map((c) => c!.suppress),
      samplers: choices.map((c) => c!.sampler?.sampler ?? null),
      interrupt,
    });
    choices.forEach((c, i) => c!.sampler && Object.assign(c!.sampler.sampler, samplers[i]));
    const done = chosen.length / b;
    kv.len += done;
    const finished = new Set<Row>();
    for (let k = 0; k < done; k++) {
      rows.forEach((r, i) => {
        if (finished.has(r)) return;
        if (r.req.signal.aborted || accept(r, chosen[k * b + i]!)) finished.add(r);
      });
    }
    return finished;
  };

  /** One decode step of every row; returns the rows that finished. */
  const step = async (alone = true): Promise<Set<Row>> => {
    const ahead = await stepAhead(alone);
    if (ahead) return ahead;
    const b = rows.length;
    const len = main!.len;
    const mask = new BigInt64Array(b * (len + 1));
    rows.forEach((r, i) => mask.fill(1n, i * (len + 1) + r.pad, (i + 1) * (len + 1)));
    const logits = await forward(
      main!,
      b,
      BigInt64Array.from(rows, (r) => r.ids.at(-1)!),
      mask,
      BigInt64Array.from(rows, (r) => BigInt(len - r.pad)),
    );
    const finished = new Set<Row>();
    rows.forEach((r, i) => {
      if (r.req.signal.aborted) return void finished.add(r);
      if (accept(r, pick(r, logits[i]!))) finished.add(r);
    });
    return finished;
  };

  /**
   * A decode step of the running rows, failing them all if it fails (the cache is gone with them). `alone`:
   * no prefill is under way (between a prefill's chunks, one step at a time).
   */
  const stepRows = async (alone = true) => {
    let finished: Set<Row>;
    try {
      finished = await step(alone);
    } catch (e) {
      for (const r of rows) r.fail(e);
      rows = [];
      dropKv(main);
      main = undefined;
      return;
    }
    if (finished.size) {
      for (const r of finished) r.done();
      await repack(rows.filter((r) => !finished.has(r)));
    }
  };

  /** Prefill `group` together (left-padded), in chunks with decode steps between them while rows run. */
  const prefill = async (group: Row[]) => {
    const g = group.length;
    const L = Math.max(...group.map((r) => r.req.promptIds.length));
    group.forEach((r) => (r.pad = L - r.req.promptIds.length));
    const kv = newKv();
    try {
      let logits: Float32Array[] = [];
      for (let at = 0; at < L;) {
        const q = Math.min(rows.length ? PREFILL_CHUNK : Math.max(PREFILL_CHUNK, Math.floor(PREFILL_CHUNK_ALONE / g)), L - at);
        const ids = new BigInt64Array(g * q);
        const pos = new BigInt64Array(g * q);
        const mask = new BigInt64Array(g * (at + q));
        group.forEach((r, i) => {
          for (let j = 0; j < q; j++) {
            const col = at + j - r.pad; // position within the row's own prompt
            if (col >= 0) (ids[i * q + j] = BigInt(r.req.promptIds[col]!)), (pos[i * q + j] = BigInt(col));
          }
          mask.fill(1n, i * (at + q) + r.pad, (i + 1) * (at + q));
        });
        logits = await forward(kv, g, ids, mask, pos);
        at += q;
        if (at < L && rows.length) await stepRows(false);
      }
      const joining: Row[] = [];
      group.forEach((r, i) => {
        if (r.req.signal.aborted || accept(r, pick(r, logits[i]!))) r.done();
        else joining.push(r);
      });
      if (joining.length) await repack(rows, joining, kv);
    } finally {
      dropKv(kv); // its rows were copied into the batch's cache, or failed
    }
  };

  const loop = async () => {
    running = true;
    try {
      // requests arriving in the same turn (a burst) are prefilled as one group
      await new Promise((r) => setTimeout(r, 0));
      while (pending.length || rows.length) {
        const group: Row[] = [];
        for (const r of pending.splice(0)) {
          if (r.req.signal.aborted) r.done();
          else group.push(r);
        }
        if (group.length) {
          try {
            await prefill(group);
          } catch (e) {
            for (const r of group) r.fail(e);
          }
        }
        if (rows.length) await stepRows();
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
        Atomics.store(interrupt, 0, 1);
        req.signal.addEventListener('abort', () => Atomics.store(interrupt, 0, 1), { once: true });
        if (!running) void loop();
      });
    },
  };
}
