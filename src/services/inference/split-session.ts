/**
 * Runs a graph cut around its 4-bit products (./weight-split.ts) as one session: ONNX Runtime
 * sessions for the graph stages, svc's own kernels (src/runtime/kernels.ts) for the cut parts, the values
 * between them kept as tensors here. It answers `run(feeds, fetches)` as an onnxruntime-node session does,
 * so the inference thread (./ort-sessions.ts) uses it in place of one: outputs handed in preallocated are
 * written into.
 */
import type { NativeKernels, PackedQ4 } from '../../runtime/kernels.ts';
import type { OrtWeb } from './backend.ts';
import { syncSession } from './onnxruntime-node.ts';
import type { Q4Product, SplitGraph, ValueMetadata } from './weight-split.ts';

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

type Step = { kind: 'graph'; session: StageSession; inputs: string[]; outputs: string[] } | { kind: 'kernels'; calls: Call[] };

export class SplitSession {
  /** Graph stages and kernel calls a run makes (steps: residual sums and norms between products). */
  readonly stages: { graphs: number; mlps: number; products: number; steps: number };

  private constructor(
    private ort: OrtWeb,
    private steps: Step[],
    readonly inputNames: string[],
    readonly outputNames: string[],
    readonly inputMetadata: ValueMetadata[],
    readonly outputMetadata: ValueMetadata[],
    counts: { mlps: number; products: number; steps: number },
  ) {
    this.stages = { graphs: steps.filter((s) => s.kind === 'graph').length, ...counts };
  }

  /** Sessions for the graph stages (with `options`, on one thread), the kernels' weights packed. */
  static async create(
    ort: OrtWeb,
    kernels: NativeKernels,
    split: SplitGraph,
    options: Record<string, unknown>,
  ): Promise<SplitSession> {
    const threads = Number(options.intraOpNumThreads) || 1;
    const steps: Step[] = [];
    const counts = { mlps: 0, products: 0, steps: 0 };
    const packed = (p: Q4Product): PackedQ4 => kernels.packQ4(p.b, p.scales, p.k, p.n);
    try {
      for (const s of split.stages) {
        if (s.kind === 'graph') {
          // no memory arena per stage: each would keep the largest attention its layer ever computed (24 of
          // them held ~1 GB each after a 2,000-token prompt); freed after each run, a layer's buffers are
          // there for the next stage's to reuse
          const session = await stageSession(ort, s.model, { ...options, enableCpuMemArena: false });
          steps.push({ kind: 'graph', session, inputs: s.inputs, outputs: s.outputs });
          continue;
        }
        steps.push({
          kind: 'kernels',
          calls: s.calls.map((c): Call => {
            const same = (k: number) => k;
            switch (c.kind) {
              case 'product': {
                counts.products++;
                const { input, output, n } = c.product, w = packed(c.product), bias = c.bias;
                return {
                  inputs: [input],
                  output,
                  width: () => n,
                  run: (x, _, m, y) => (kernels.matmulQ4(w, x, m, y, threads), bias && kernels.addInto(y, bias, y)),
                };
              }
              case 'mlp': {
                counts.mlps++;
                const [gate, up, down] = [packed(c.mlp.gate), packed(c.mlp.up), packed(c.mlp.down)];
                const n = c.mlp.down.n;
                return {
                  inputs: [c.mlp.input],
                  output: c.mlp.output,
                  width: () => n,
                  run: (x, _, m, y) => kernels.mlpQ4(gate, up, down, x, m, y, threads),
                };
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
      for (const s of steps) if (s.kind === 'graph') s.session.release();
      throw e;
    }
    return new SplitSession(ort, steps, split.inputs, split.outputs, split.metadata.inputs, split.metadata.outputs, counts);
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
    const handed = new Set(wanted);
    const key = shapesOf(feeds);
    const reused = this.scratch.get(key);
    const made = reused ? undefined : new Map<string, OrtTensor>();
    const into = (name: string) => fetches?.[name] ?? (handed.has(name) ? null : reused?.get(name) ?? null);
    for (const s of this.steps) {
      if (s.kind === 'graph') {
        const ins: Record<string, OrtTensor> = {};
        for (const x of s.inputs) ins[x] = values.get(x)!;
        const outs: Record<string, OrtTensor | null> = {};
        for (const x of s.outputs) outs[x] = into(x);
        let got: Record<string, OrtTensor>;
        try {
          // the binding's run returns its outputs, not a promise: no turn of the microtask queue per stage
          const r = s.session.run(ins, outs);
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
        const k = x.dims.at(-1)!, m = x.size / k, n = c.width(k);
        const given = into(c.output);
        const y = given?.size === m * n ? given : new this.ort.Tensor('float32', new Float32Array(m * n), [...x.dims.slice(0, -1), n]);
        c.run(x.data as Float32Array, other?.data as Float32Array | undefined, m, y.data as Float32Array);
        values.set(c.output, y);
        if (!handed.has(c.output)) made?.set(c.output, y);
      }
    }
    if (made && [...made.values()].reduce((n, t) => n + (t.data as ArrayBufferView).byteLength, 0) <= SCRATCH_BYTES) {
      if (this.scratch.size >= SCRATCH_SETS) this.scratch.delete(this.scratch.keys().next().value!);
      this.scratch.set(key, made);
    }
    return Object.fromEntries(wanted.map((n) => [n, values.get(n)!]));
  }

  async release(): Promise<void> {
    await Promise.all(this.steps.map((s) => (s.kind === 'graph' ? s.session.release() : undefined)));
  }
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
 * before computing, ~15 µs, paid by every stage of every step), else the package's session.
 */
async function stageSession(ort: OrtWeb, model: Uint8Array, options: Record<string, unknown>): Promise<StageSession> {
  const sync = syncSession(model, options);
  if (!sync) {
    const s = await ort.InferenceSession.create(model as never, options as never);
    return { run: (feeds, fetches) => s.run(feeds as never, fetches as never) as never, release: () => s.release() };
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
      for (const [name, t] of Object.entries(out)) result[name] = tensor(t);
      return result;
    },
    release: () => sync.dispose(),
  };
}
