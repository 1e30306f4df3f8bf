/**
 * Runs a graph cut around its 4-bit MLPs and LM head (./weight-split.ts) as one session: ONNX Runtime
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

/** A kernel call: `input` [..., k] to `output` [..., n]. */
interface Call {
  input: string;
  output: string;
  k: number;
  n: number;
  run(x: Float32Array, m: number, y: Float32Array): void;
}

type Step = { kind: 'graph'; session: StageSession; inputs: string[]; outputs: string[] } | { kind: 'kernels'; calls: Call[] };

export class SplitSession {
  /** Graph stages and kernel calls a run makes. */
  readonly stages: { graphs: number; mlps: number; products: number };

  private constructor(
    private ort: OrtWeb,
    private steps: Step[],
    readonly inputNames: string[],
    readonly outputNames: string[],
    readonly inputMetadata: ValueMetadata[],
    readonly outputMetadata: ValueMetadata[],
    counts: { mlps: number; products: number },
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
    const counts = { mlps: 0, products: 0 };
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
            if (c.kind === 'product') {
              counts.products++;
              const w = packed(c.product);
              return { ...c.product, run: (x, m, y) => kernels.matmulQ4(w, x, m, y, threads) };
            }
            counts.mlps++;
            const [gate, up, down] = [packed(c.mlp.gate), packed(c.mlp.up), packed(c.mlp.down)];
            return {
              input: c.mlp.input,
              output: c.mlp.output,
              k: c.mlp.gate.k,
              n: c.mlp.down.n,
              run: (x, m, y) => kernels.mlpQ4(gate, up, down, x, m, y, threads),
            };
          }),
        });
      }
    } catch (e) {
      for (const s of steps) if (s.kind === 'graph') s.session.release();
      throw e;
    }
    return new SplitSession(ort, steps, split.inputs, split.outputs, split.metadata.inputs, split.metadata.outputs, counts);
  }

  /** The outputs named in `fetches` (all without), those given a tensor written into it. */
  async run(feeds: Record<string, OrtTensor>, fetches?: Record<string, OrtTensor | null>): Promise<Record<string, OrtTensor>> {
    const values = new Map<string, OrtTensor>(Object.entries(feeds));
    const wanted = fetches ? Object.keys(fetches) : this.outputNames;
    const into = (name: string) => fetches?.[name] ?? null;
    for (const s of this.steps) {
      if (s.kind === 'graph') {
        const ins: Record<string, OrtTensor> = {};
        for (const x of s.inputs) ins[x] = values.get(x)!;
        const outs: Record<string, OrtTensor | null> = {};
        for (const x of s.outputs) outs[x] = into(x);
        const got = await s.session.run(ins, outs);
        for (const [x, t] of Object.entries(got)) values.set(x, t);
        continue;
      }
      for (const c of s.calls) {
        const x = values.get(c.input)!;
        const m = x.size / c.k;
        const given = into(c.output);
        const y = (given?.data as Float32Array | undefined) ?? new Float32Array(m * c.n);
        c.run(x.data as Float32Array, m, y);
        values.set(c.output, given ?? new this.ort.Tensor('float32', y, [...x.dims.slice(0, -1), c.n]));
      }
    }
    return Object.fromEntries(wanted.map((n) => [n, values.get(n)!]));
  }

  async release(): Promise<void> {
    await Promise.all(this.steps.map((s) => (s.kind === 'graph' ? s.session.release() : undefined)));
  }
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
