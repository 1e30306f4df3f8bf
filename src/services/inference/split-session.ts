/**
 * Runs a graph cut around its weight products (./weight-split.ts) as one session: ONNX Runtime
 * sessions for the graph stages, svc's own kernels (src/runtime/kernels.ts) for the cut parts, the values
 * between them kept as tensors here. It answers `run(feeds, fetches)` as an onnxruntime-node session does,
 * so the inference thread (./ort-sessions.ts) uses it in place of one: outputs handed in preallocated are
 * written into.
 */
import type { NativeKernels, PackedQ4, PackedQ8 } from '../../runtime/kernels.ts';
import { attentionOf, type AttentionStage } from './attention-stage.ts';
import type { OrtWeb } from './backend.ts';
import { syncSession } from './onnxruntime-node.ts';
import { indexGraph, modelGraph } from '../models/onnx-wire.ts';
import type { Mlp, SplitGraph, ValueMetadata, WeightProduct } from './weight-split.ts';

type OrtTensor = InstanceType<OrtWeb['Tensor']>;

/** A graph stage's session: onnxruntime-node's binding run directly where it can be (./onnxruntime-node.ts). */
interface StageSession {
  run(
    feeds: Record<string, OrtTensor>,
    fetches: Record<string, OrtTensor | null>,
  ): Record<string, OrtTensor> | Promise<Record<string, OrtTensor>>;
  release(): unknown;
}

/**
 * A kernel call: `inputs` (the first [..., k], a second of its size for a sum) to `output` [..., width(k)], m
 * rows of the first input.
 */
interface Call {
  inputs: string[];
  output: string;
  width(k: number): number;
  run(x: Float32Array, other: Float32Array | undefined, m: number, y: Float32Array): void;
}

type Step =
  | { kind: 'graph'; session: StageSession; wide?: StageSession; inputs: string[]; outputs: string[]; attention?: AttentionStage }
  | { kind: 'kernels'; calls: Call[] };

/**
 * New positions a row up to which a layer's attention stage runs on the kernel (a decode step; a few drafted
 * tokens), not in ONNX Runtime. The kernel takes each score as one dot product; natively a prefill's many rows go
 * to ONNX Runtime's matrix products. On WASM every attention but the first layer's runs on the kernel: there
 * onnxruntime-web has one thread (src/services/inference/ort-thread.ts), and its float products ran a
 * 2,695-token prompt's attention stages in 12.6 s, the kernel on two threads in 6.4 s (by hand, q8).
 */
const ATTENTION_KERNEL_NEW = 8;

export class SplitSession {
  /** Graph stages and kernel calls a run makes (steps: residual sums and norms between products). */
  readonly stages: { graphs: number; mlps: number; products: number; steps: number; attentions: number };

  private constructor(
    private ort: OrtWeb,
    private steps: Step[],
    readonly inputNames: string[],
    readonly outputNames: string[],
    readonly inputMetadata: ValueMetadata[],
    readonly outputMetadata: ValueMetadata[],
    counts: { mlps: number; products: number; steps: number; attentions: number },
    private kernels: NativeKernels,
    private threads: number,
    /** New positions a row up to which attention stages run on the kernel (`ATTENTION_KERNEL_NEW`). */
    private attentionNew: number,
  ) {
    this.stages = { graphs: steps.filter((s) => s.kind === 'graph').length, ...counts };
  }

  /**
   * Sessions for the graph stages (with `options`, on one thread), the kernels' weights packed. `binding`: the
   * stages may run on onnxruntime-node's binding directly (`ort` is onnxruntime-node).
   */
  static async create(
    ort: OrtWeb,
    kernels: NativeKernels,
    split: SplitGraph,
    options: Record<string, unknown>,
    binding = true,
  ): Promise<SplitSession> {
    const threads = Number(options.intraOpNumThreads) || 1;
    const steps: Step[] = [];
    const counts = { mlps: 0, products: 0, steps: 0, attentions: 0 };
    type Packed = { bits: 4; w: PackedQ4 } | { bits: 8; w: PackedQ8 };
    const packed = (p: WeightProduct): Packed =>
      p.bits === 4
        ? { bits: 4, w: kernels.packQ4(p.b, p.scales, p.k, p.n) }
        : { bits: 8, w: kernels.packQ8(p.w, p.scales, p.k, p.n, p.zeroPoint) };
    const product = (p: WeightProduct): (x: Float32Array, m: number, y: Float32Array) => void => {
      const w = packed(p);
      return w.bits === 4 ? (x, m, y) => kernels.matmulQ4(w.w, x, m, y, threads) : (x, m, y) => kernels.matmulQ8(w.w, x, m, y, threads);
    };
    const mlp = (c: Mlp): (x: Float32Array, m: number, y: Float32Array) => void => {
      const [gate, up, down] = [packed(c.gate), packed(c.up), packed(c.down)];
      if (gate.bits === 4 && up.bits === 4 && down.bits === 4) return (x, m, y) => kernels.mlpQ4(gate.w, up.w, down.w, x, m, y, threads);
      if (gate.bits === 8 && up.bits === 8 && down.bits === 8) return (x, m, y) => kernels.mlpQ8(gate.w, up.w, down.w, x, m, y, threads);
      throw new TypeError("an MLP's products must be of one width");
    };
    try {
      for (const s of split.stages) {
        if (s.kind === 'graph') {
          // no memory arena per stage: each would keep the largest attention its layer ever computed (24 of
          // them held ~1 GB each after a 2,000-token prompt); freed after each run, a layer's buffers are
          // there for the next stage's to reuse
          const one = { ...options, enableCpuMemArena: false, intraOpNumThreads: 1 };
          const session = await stageSession(ort, s.model, one, binding);
          // with more threads, a stage without weights of its own (an attention) gets a twin on them all for
          // a prefill's many positions; a decode step's stages are too small to gain from threads, whose
          // waking and spinning only took the cores from the kernels' threads. (onnxruntime-web's threads are
          // one setting for all its sessions: no twin there.)
          const wide = binding && threads > 1 && weightless(s.model)
            ? await stageSession(ort, s.model, spinless({ ...one, intraOpNumThreads: threads }), binding)
            : undefined;
          const attention = attentionOf(s.model, s.inputs, s.outputs);
          if (attention) counts.attentions++;
          steps.push({ kind: 'graph', session, wide, inputs: s.inputs, outputs: s.outputs, attention });
          continue;
        }
        steps.push({
          kind: 'kernels',
          calls: s.calls.map((c): Call => {
            const same = (k: number) => k;
            switch (c.kind) {
              case 'product': {
                counts.products++;
                const { input, output, n } = c.product, multiply = product(c.product), bias = c.bias;
                return {
                  inputs: [input],
                  output,
                  width: () => n,
                  run: (x, _, m, y) => (multiply(x, m, y), bias && kernels.addInto(y, bias, y)),
                };
              }
              case 'mlp': {
                counts.mlps++;
                const n = c.mlp.down.n, run = mlp(c.mlp);
                return { inputs: [c.mlp.input], output: c.mlp.output, width: () => n, run: (x, _, m, y) => run(x, m, y) };
              }
              case 'add':
                counts.steps++;
                return { inputs: c.inputs, output: c.output, width: same, run: (a, b, _m, y) => kernels.addInto(a, b!, y) };
              case 'rmsNorm': {
                counts.steps++;
                const { input, output, weight, epsilon } = c.norm;
                return { inputs: [input], output, width: same, run: (x, _, _m, y) => kernels.rmsNorm(x, weight, epsilon, y) };
              }
            }
          }),
        });
      }
    } catch (e) {
      for (const s of steps) if (s.kind === 'graph') s.session.release(), s.wide?.release();
      throw e;
    }
    return new SplitSession(
      ort,
      steps,
      split.inputs,
      split.outputs,
      split.metadata.inputs,
      split.metadata.outputs,
      counts,
      kernels,
      threads,
      binding ? ATTENTION_KERNEL_NEW : Infinity,
    );
  }

  /**
   * The values a run makes and does not hand back (what passes between stages and kernel calls), kept by the
   * shapes and small values of its feeds: a decode step's shapes repeat from step to step (the batch decoder
   * feeds its cache at a fixed capacity), so a step's stages and kernels write into the buffers the first such
   * step made instead of new ones, which the inference thread's garbage collector would have to free. A few
   * sets, each under SCRATCH_BYTES: a prefill's chunks each have other shapes.
   */
  private scratch = new Map<string, Map<string, OrtTensor>>();

  /** The outputs named in `fetches` (all without), those given a tensor written into it. */
  async run(feeds: Record<string, OrtTensor>, fetches?: Record<string, OrtTensor | null>): Promise<Record<string, OrtTensor>> {
    const values = new Map<string, OrtTensor>(Object.entries(feeds));
    const wanted = fetches ? Object.keys(fetches) : this.outputNames;
    const skip = this.unneeded(wanted);
    const few = (feeds.input_ids?.dims.at(-1) ?? Infinity) <= ATTENTION_KERNEL_NEW;
    const handed = new Set(wanted);
    const key = shapesOf(feeds);
    const reused = this.scratch.get(key);
    const made = reused ? undefined : new Map<string, OrtTensor>();
    const into = (name: string) => fetches?.[name] ?? (handed.has(name) ? null : reused?.get(name) ?? null);
    /** A float tensor of `dims` for `name`: the one handed in or kept, where its size fits, else a new one. */
    const output = (name: string, dims: readonly number[]): OrtTensor => {
      const size = dims.reduce((a, b) => a * b, 1);
      const given = into(name);
      const t = given?.size === size ? given : new this.ort.Tensor('float32', new Float32Array(size), dims);
      values.set(name, t);
      if (!handed.has(name)) made?.set(name, t);
      return t;
    };
    for (const s of this.steps) {
      if (skip.has(s)) continue;
      if (s.kind === 'graph' && s.attention && this.attend(s.attention, values, output)) continue;
      if (s.kind === 'graph') {
        const ins: Record<string, OrtTensor> = {};
        for (const x of s.inputs) ins[x] = values.get(x)!;
        const outs: Record<string, OrtTensor | null> = {};
        for (const x of s.outputs) outs[x] = into(x);
        let got: Record<string, OrtTensor>;
        try {
          // the binding's run returns its outputs, not a promise: no turn of the microtask queue per stage
          const session = few ? s.session : s.wide ?? s.session;
          // ONNX Runtime's threads take the cores: the kernels' threads stop spinning
          if (session === s.wide) this.kernels.rest();
          const r = session.run(ins, outs);
          got = r instanceof Promise ? await r : r;
        } catch (e) {
          if (!reused) throw e;
          // a shape the feeds' shapes did not settle (made from a value): this set is not to be reused
          this.scratch.delete(key);
          return this.run(feeds, fetches);
        }
        for (const [x, t] of Object.entries(got)) {
          values.set(x, t);
          if (!handed.has(x)) made?.set(x, t);
        }
        continue;
      }
      for (const c of s.calls) {
        const x = values.get(c.inputs[0]!)!, other = c.inputs[1] === undefined ? undefined : values.get(c.inputs[1])!;
        const k = x.dims.at(-1)!, m = x.size / k;
        const y = output(c.output, [...x.dims.slice(0, -1), c.width(k)]);
        c.run(x.data as Float32Array, other?.data as Float32Array | undefined, m, y.data as Float32Array);
      }
    }
    if (made && [...made.values()].reduce((n, t) => n + (t.data as ArrayBufferView).byteLength, 0) <= SCRATCH_BYTES) {
      if (this.scratch.size >= SCRATCH_SETS) this.scratch.delete(this.scratch.keys().next().value!);
      this.scratch.set(key, made);
    }
    return Object.fromEntries(wanted.map((n) => [n, values.get(n)!]));
  }

  /** Graph stages by the outputs a run fetches: those whose outputs neither it nor a later step reads. */
  private skipped = new Map<string, Set<Step>>();

  private unneeded(wanted: string[]): Set<Step> {
    const key = wanted.join('\n');
    let skip = this.skipped.get(key);
    if (skip) return skip;
    skip = new Set();
    const needed = new Set(wanted);
    for (const s of [...this.steps].reverse()) {
      if (s.kind === 'kernels') {
        for (const c of s.calls) c.inputs.forEach((x) => needed.add(x));
      } else if (s.outputs.some((x) => needed.has(x))) s.inputs.forEach((x) => needed.add(x));
      else skip.add(s);
    }
    if (this.skipped.size < SCRATCH_SETS) this.skipped.set(key, skip);
    return skip;
  }

  /**
   * A layer's attention on the kernel, where the values have the shapes the stage was recognized for and each
   * row adds few positions; false (nothing made) to leave it to the stage's session.
   */
  private attend(a: AttentionStage, values: Map<string, OrtTensor>, output: (name: string, dims: readonly number[]) => OrtTensor): boolean {
    const [q, k, v, pos, cos, sin, pastK, pastV, mask] = [a.q, a.k, a.v, a.pos, a.cos, a.sin, a.pastKey, a.pastValue, a.mask].map((x) =>
      values.get(x)
    );
    if (!q || !k || !v || !pos || !cos || !sin || !pastK || !pastV || !mask || q.dims.length !== 3) return false;
    const [b, s] = q.dims as [number, number], d = a.headSize;
    const past = pastK.dims[2]!;
    const is = (t: OrtTensor, type: string, dims: number[]) =>
      t.type === type && t.dims.length === dims.length && dims.every((x, i) => t.dims[i] === x);
    if (
      s > this.attentionNew || !is(q, 'float32', [b, s, a.heads * d]) || !is(k, 'float32', [b, s, a.kvHeads * d]) ||
      !is(v, 'float32', [b, s, a.kvHeads * d]) || !is(pos, 'int64', [b, s]) || !is(cos, 'float32', [cos.dims[0]!, d / 2]) ||
      !is(sin, 'float32', cos.dims as number[]) || !is(pastK, 'float32', [b, a.kvHeads, past, d]) ||
      !is(pastV, 'float32', [b, a.kvHeads, past, d]) || !is(mask, 'float32', [b, 1, s, past + s])
    ) return false;
    const out = output(a.output, [b, s, a.heads * d]);
    const [key, ...keyCopies] = a.keys.map((x) => output(x, [b, a.kvHeads, s, d]));
    const [value, ...valueCopies] = a.values.map((x) => output(x, [b, a.kvHeads, s, d]));
    const f = (t: OrtTensor | undefined) => t?.data as Float32Array;
    const newK = f(key) ?? new Float32Array(k.size), newV = f(value) ?? new Float32Array(v.size);
    this.kernels.attention(
      {
        q: f(q),
        k: f(k),
        v: f(v),
        pos: pos.data as BigInt64Array,
        cos: f(cos),
        sin: f(sin),
        pastK: f(pastK),
        pastV: f(pastV),
        mask: f(mask),
        out: f(out),
        newK,
        newV,
      },
      s,
      a.heads,
      a.kvHeads,
      d,
      a.divisor,
      this.threads,
    );
    for (const t of keyCopies) f(t).set(newK);
    for (const t of valueCopies) f(t).set(newV);
    return true;
  }

  async release(): Promise<void> {
    await Promise.all(this.steps.flatMap((s) => (s.kind === 'graph' ? [s.session.release(), s.wide?.release()] : [])));
  }
}

/** Whether a stage's graph holds no more than a few small constants (an attention; not the embedding table). */
function weightless(model: Uint8Array): boolean {
  const inits = indexGraph(modelGraph(model)!.graph).inits;
  return [...inits.values()].every((t) => t.dims.reduce((a, b) => a * b, 1) <= 1 << 16);
}

/** Session options whose intra-op threads sleep as soon as a run ends instead of spinning for the next. */
function spinless(options: Record<string, unknown>): Record<string, unknown> {
  const extra = (options.extra ?? {}) as { session?: Record<string, unknown> };
  return { ...options, extra: { ...extra, session: { ...extra.session, 'intra_op.allow_spinning': '0' } } };
}

/** Sets of reused buffers a session keeps, and the largest one kept (a decode step of 4 rows of a 0.5B model: ~3 MB). */
const SCRATCH_SETS = 4;
const SCRATCH_BYTES = 8 << 20;

/** The feeds' names and shapes, and the values of those with at most one element (a switch, a count). */
function shapesOf(feeds: Record<string, OrtTensor>): string {
  let key = '';
  for (const name in feeds) {
    const t = feeds[name]!;
    key += `${name}:${t.dims.join(',')}${t.size <= 1 ? `=${(t.data as ArrayLike<unknown>)[0]}` : ''};`;
  }
  return key;
}

/**
 * A stage's session: onnxruntime-node's binding directly (its package's `run` waits a turn of the event loop
 * before computing, ~15 µs, paid by every stage of every step), else the package's session. Either way it
 * answers with the output tensors it was handed, written. onnxruntime-web leaves handed buffers unwritten (a
 * batch's decode steps then read a step's stale values: garbage text), so it is handed none and its outputs
 * are copied into them.
 */
async function stageSession(ort: OrtWeb, model: Uint8Array, options: Record<string, unknown>, binding: boolean): Promise<StageSession> {
  const sync = binding ? syncSession(model, options) : undefined;
  /** The tensor handed for an output, where the one made holds the same type and size: written with it first. */
  const handedBack = (given: OrtTensor | null | undefined, made: OrtTensor): OrtTensor => {
    if (!given || given === made || given.type !== made.type || given.size !== made.size) return made;
    const [to, from] = [given.data as Float32Array, made.data as Float32Array];
    if (to.buffer !== from.buffer || to.byteOffset !== from.byteOffset) to.set(from);
    return given;
  };
  if (!sync) {
    const s = await ort.InferenceSession.create(model as never, options as never);
    if (binding) return { run: (feeds, fetches) => s.run(feeds as never, fetches as never) as never, release: () => s.release() };
    return {
      run: async (feeds, fetches) => {
        const out = (await s.run(feeds as never)) as Record<string, OrtTensor>;
        for (const name in out) out[name] = handedBack(fetches[name], out[name]!);
        return out;
      },
      release: () => s.release(),
    };
  }
  const tensor = (t: unknown): OrtTensor => {
    if (t instanceof ort.Tensor) return t;
    const r = t as { type: string; data: unknown; dims: number[] };
    return new ort.Tensor(r.type as never, r.data as never, r.dims);
  };
  return {
    run: (feeds, fetches) => {
      const out = sync.run(feeds, fetches, {});
      const result: Record<string, OrtTensor> = {};
      for (const [name, t] of Object.entries(out)) result[name] = handedBack(fetches[name], tensor(t));
      return result;
    },
    release: () => sync.dispose(),
  };
}
