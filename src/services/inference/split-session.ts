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
import { type JoinedProducts, joinProducts } from './joined-products.ts';
import type { Kernel, Mlp, SplitGraph, ValueMetadata, WeightProduct } from './weight-split.ts';

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
 * A kernel call: reads `inputs` (slots `x` and `other` in a run's values, -1: none) and writes its outputs
 * through `writes`; `own`: the slots it writes into the tensors handed or kept for them (not views).
 */
interface Call {
  inputs: string[];
  x: number;
  other: number;
  own: number[];
  run(x: OrtTensor, other: OrtTensor | undefined, writes: Writes): void;
}

/**
 * How a run's steps get the tensors they write: `fitting(i, size)` the one handed in or kept for slot i where it
 * holds size values, `fresh(dims)` a new one, `keep(i, t)` t as slot i's value (kept for runs of the same shapes
 * unless it is handed back).
 */
interface Writes {
  fitting(i: number, size: number): OrtTensor | undefined;
  fresh(dims: number[]): OrtTensor;
  keep(i: number, t: OrtTensor): OrtTensor;
}

/** A residual sum and the norm that reads it (adjacent calls), made in one kernel call. */
interface SumNormed {
  kind: 'sumNormed';
  inputs: [string, string];
  sum: string;
  norm: Extract<Kernel, { kind: 'rmsNorm' }>['norm'];
}

/** `calls` with each sum that the next call, a norm, reads taken with it. */
function sumsNormed(calls: (Kernel | JoinedProducts)[]): (Kernel | JoinedProducts | SumNormed)[] {
  const out: (Kernel | JoinedProducts | SumNormed)[] = [];
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i]!, next = calls[i + 1];
    if (c.kind === 'add' && next?.kind === 'rmsNorm' && next.norm.input === c.output) {
      out.push({ kind: 'sumNormed', inputs: c.inputs, sum: c.output, norm: next.norm });
      i++;
    } else out.push(calls[i]!);
  }
  return out;
}

/** An attention stage's values by slot. */
interface Attend {
  stage: AttentionStage;
  /** q, k, v, pos, cos, sin, past key, past value, mask; the output; the rotated new keys and the new values */
  in: number[];
  out: number;
  keys: number[];
  values: number[];
}

type Step =
  | {
    kind: 'graph';
    session: StageSession;
    wide?: StageSession;
    inputs: string[];
    outputs: string[];
    ins: number[];
    outs: number[];
    attention?: Attend;
  }
  | { kind: 'kernels'; calls: Call[] };

/** What runs that fetch the same outputs share: the graph stages they skip, and which slots are handed back. */
interface Fetching {
  skip: Set<Step>;
  handed: boolean[];
  /** the outputs fetched, and their slots (-1: a name no step makes) */
  wanted: string[];
  slots: number[];
}

/**
 * New positions a row up to which a graph stage runs on its one-thread session; more take its twin on all the
 * threads (a stage the kernels do not take: an attention they did not recognize).
 *
 * Every recognized attention runs on the kernel, a prefill's as a decode step's, natively as on WASM: each row
 * by itself over the positions it sees, so a row's prompt gives the same values alone, left-padded beside
 * others, or in chunks between other rows' decode steps (ONNX Runtime's matrix products summed a padded or
 * chunked row's scores in other groupings, so its values and in time its greedy text changed with the load). It
 * costs nothing: by hand (q4 0.5B, medians of 5) prompts of 30 to 1,000 tokens took as long as with ONNX Runtime's
 * products at one thread and 0.92-0.99x at two (1,000 tokens: 5.0-5.1 s against 5.4-5.5). On WASM onnxruntime-web has one thread
 * (src/services/inference/ort-thread.ts), and its float products ran a 2,695-token prompt's attention stages in
 * 12.6 s, the kernel on two threads in 6.4 s (by hand, q8).
 */
const ONE_THREAD_NEW = 8;

export class SplitSession {
  /** Graph stages and kernel calls a run makes (steps: residual sums and norms between products). */
  readonly stages: { graphs: number; mlps: number; products: number; joined: number; steps: number; attentions: number };

  private constructor(
    private ort: OrtWeb,
    private steps: Step[],
    /** Every value a run has (feeds, what passes between steps, outputs) by its slot in a run's values. */
    private names: string[],
    readonly inputNames: string[],
    readonly outputNames: string[],
    readonly inputMetadata: ValueMetadata[],
    readonly outputMetadata: ValueMetadata[],
    counts: { mlps: number; products: number; joined: number; steps: number; attentions: number },
    private kernels: NativeKernels,
    private threads: number,
  ) {
    this.stages = { graphs: steps.filter((s) => s.kind === 'graph').length, ...counts };
    this.slots = new Map(names.map((n, i) => [n, i]));
  }

  private slots: Map<string, number>;

  /**
   * Whether a kernel call, not an ONNX Runtime stage, writes output `name`: the tensor handed for it may then be a
   * view of shared memory (the logits a decode step hands the server's thread), which ONNX Runtime cannot write.
   */
  writesOwn(name: string): boolean {
    let own = this.own.get(name);
    if (own === undefined) {
      const i = this.slots.get(name);
      own = i !== undefined && this.steps.some((s) => s.kind === 'kernels' && s.calls.some((c) => c.own.includes(i)));
      this.own.set(name, own);
    }
    return own;
  }

  private own = new Map<string, boolean>();

  /**
   * Sessions for the graph stages (with `options`, on one thread), the kernels' weights packed. `binding`: the
   * stages may run on onnxruntime-node's binding directly (`ort` is onnxruntime-node). `consume`: each of the
   * cut's weights is let go as soon as it is packed (the cut is not for another session), so that the packed
   * copies reuse their memory: a q8 0.5B model's load peaked at 1.2 GiB instead of 1.5.
   */
  static async create(
    ort: OrtWeb,
    kernels: NativeKernels,
    split: SplitGraph,
    options: Record<string, unknown>,
    binding = true,
    consume = false,
  ): Promise<SplitSession> {
    const threads = Number(options.intraOpNumThreads) || 1;
    const steps: Step[] = [];
    const slots = new Map<string, number>();
    const slot = (name: string) => slots.get(name) ?? (slots.set(name, slots.size), slots.size - 1);
    for (const name of [...split.inputs, ...split.outputs]) slot(name);
    const counts = { mlps: 0, products: 0, joined: 0, steps: 0, attentions: 0 };
    type Packed = { bits: 4; w: PackedQ4 } | { bits: 8; w: PackedQ8 };
    // a product met again (its weights let go) gets what it was packed into
    const done = new Map<WeightProduct, Packed>();
    const letGo = (p: WeightProduct) => {
      if (p.bits === 4) p.b = new Uint8Array(0);
      else p.w = new Int8Array(0);
    };
    const packed = (p: WeightProduct): Packed => {
      let w = done.get(p);
      if (w) return w;
      w = p.bits === 4
        ? { bits: 4, w: kernels.packQ4(p.b, p.scales, p.k, p.n) }
        : { bits: 8, w: kernels.packQ8(p.w, p.scales, p.k, p.n, p.zeroPoint) };
      if (consume) letGo(p);
      done.set(p, w);
      return w;
    };
    // An 8-bit product quantizes each position's activations by itself (m sets of one row), where the graph's
    // DynamicQuantizeLinear takes the whole tensor together (4 bits take each position by itself anyway, per
    // block): a row's values are then the same alone, in a batch, left-padded or in chunks, and nearer fp32's.
    type Multiply = (x: Float32Array, m: number, y: Float32Array) => void;
    const product = (p: WeightProduct): Multiply => {
      const w = packed(p);
      return w.bits === 4
        ? (x, m, y) => kernels.matmulQ4(w.w, x, m, y, threads)
        : (x, m, y) => kernels.matmulQ8(w.w, x, m, y, threads, false, m);
    };
    const mlp = (c: Mlp): Multiply => {
      const [gate, up, down] = [packed(c.gate), packed(c.up), packed(c.down)];
      if (gate.bits === 4 && up.bits === 4 && down.bits === 4) return (x, m, y) => kernels.mlpQ4(gate.w, up.w, down.w, x, m, y, threads);
      if (gate.bits === 8 && up.bits === 8 && down.bits === 8) {
        return (x, m, y) => kernels.mlpQ8(gate.w, up.w, down.w, x, m, y, threads, false, m);
      }
      throw new TypeError("an MLP's products must be of one width");
    };
    // a kernel call and the slots of what it reads and writes; `k`: the last dimension of its first input
    const call = (inputs: string[], own: string[], run: (x: OrtTensor, other: OrtTensor | undefined, w: Writes) => void): Call => ({
      inputs,
      x: slot(inputs[0]!),
      other: inputs[1] === undefined ? -1 : slot(inputs[1]),
      own: own.map(slot),
      run,
    });
    const k = (x: OrtTensor) => x.dims[x.dims.length - 1]!;
    const callOf = (c: Kernel | JoinedProducts | SumNormed): Call => {
      switch (c.kind) {
        case 'sumNormed': {
          counts.steps += 2;
          const { weight, epsilon } = c.norm, sum = slot(c.sum), normed = slot(c.norm.output);
          return call(c.inputs, [c.sum, c.norm.output], (a, b, w) => {
            const s = rows(sum, a, k(a), w), y = rows(normed, a, k(a), w), x = a.data as Float32Array, o = b!.data as Float32Array;
            // a sum of a row repeated (a bias) as two calls
            if (o.length === x.length) kernels.addRmsNorm(x, o, weight, epsilon, s, y);
            else kernels.addInto(x, o, s), kernels.rmsNorm(s, weight, epsilon, y);
          });
        }
        case 'joined': {
          counts.joined++;
          counts.products += c.parts.length; // the joined call counted as its parts
          const { input, output, n } = c.product, multiply = product(c.product), bias = c.bias;
          const y = slot(output), parts = c.parts.map((p) => ({ y: slot(p.output), n: p.n }));
          if (consume) c.from.forEach(letGo);
          return call([input], [output], (x, _, w) => {
            const joined = rows(y, x, n, w), m = x.size / k(x);
            multiply(x.data as Float32Array, m, joined);
            if (bias) kernels.addInto(joined, bias, joined);
            part(ort, parts, joined, x.dims, m, n, w);
          });
        }
        case 'product': {
          counts.products++;
          const { input, output, n } = c.product, multiply = product(c.product), bias = c.bias, y = slot(output);
          return call([input], [output], (x, _, w) => {
            const out = rows(y, x, n, w);
            multiply(x.data as Float32Array, x.size / k(x), out);
            if (bias) kernels.addInto(out, bias, out);
          });
        }
        case 'mlp': {
          counts.mlps++;
          const n = c.mlp.down.n, run = mlp(c.mlp), y = slot(c.mlp.output);
          return call([c.mlp.input], [c.mlp.output], (x, _, w) => run(x.data as Float32Array, x.size / k(x), rows(y, x, n, w)));
        }
        case 'add': {
          counts.steps++;
          const y = slot(c.output);
          return call(
            c.inputs,
            [c.output],
            (a, b, w) => kernels.addInto(a.data as Float32Array, b!.data as Float32Array, rows(y, a, k(a), w)),
          );
        }
        case 'lastPositions': {
          counts.steps++;
          const { input, keep, output } = c.positions, y = slot(output);
          return call([input, keep], [], (x, count, w) => lastPositions(x, count!, y, w));
        }
        case 'rmsNorm': {
          counts.steps++;
          const { input, output, weight, epsilon } = c.norm, y = slot(output);
          return call([input], [output], (x, _, w) => kernels.rmsNorm(x.data as Float32Array, weight, epsilon, rows(y, x, k(x), w)));
        }
      }
    };
    try {
      for (const s of split.stages) {
        if (s.kind === 'graph') {
          // no memory arena per stage: each would keep the largest attention its layer ever computed (24 of
          // them held ~1 GB each after a 2,000-token prompt); freed after each run, a layer's buffers are
          // there for the next stage's to reuse
          const one = { ...options, enableCpuMemArena: false, intraOpNumThreads: 1 };
          const session = await stageSession(ort, s.model, one, binding);
          const a = attentionOf(s.model, s.inputs, s.outputs);
          // with more threads, a stage without weights of its own that the kernel does not take (an attention
          // it did not recognize) gets a twin on them all for a prefill's many positions; a decode step's stages
          // are too small to gain from threads, whose waking and spinning only took the cores from the kernels'
          // threads. (onnxruntime-web's threads are one setting for all its sessions: no twin there.)
          const wide = binding && threads > 1 && !a && weightless(s.model)
            ? await stageSession(ort, s.model, spinless({ ...one, intraOpNumThreads: threads }), binding)
            : undefined;
          const ins = s.inputs.map(slot), outs = s.outputs.map(slot);
          if (a) counts.attentions++;
          const attention = a && {
            stage: a,
            in: [a.q, a.k, a.v, a.pos, a.cos, a.sin, a.pastKey, a.pastValue, a.mask].map(slot),
            out: slot(a.output),
            keys: a.keys.map(slot),
            values: a.values.map(slot),
          };
          steps.push({ kind: 'graph', session, wide, inputs: s.inputs, outputs: s.outputs, ins, outs, attention });
          continue;
        }
        steps.push({
          kind: 'kernels',
          calls: sumsNormed(joinProducts(s.calls)).map(callOf),
        });
      }
    } catch (e) {
      for (const s of steps) if (s.kind === 'graph') s.session.release(), s.wide?.release();
      throw e;
    }
    return new SplitSession(
      ort,
      steps,
      [...slots.keys()],
      split.inputs,
      split.outputs,
      split.metadata.inputs,
      split.metadata.outputs,
      counts,
      kernels,
      threads,
    );
  }

  /**
   * The values a run makes and does not hand back (what passes between stages and kernel calls), kept by the
   * shapes and small values of its feeds: a decode step's shapes repeat from step to step (the batch decoder
   * feeds its cache at a fixed capacity), so a step's stages and kernels write into the buffers the first such
   * step made instead of new ones, which the inference thread's garbage collector would have to free. A few
   * sets, each under SCRATCH_BYTES: a prefill's chunks each have other shapes.
   */
  private scratch = new Map<string, (OrtTensor | undefined)[]>();

  /** The outputs named in `fetches` (all without), those given a tensor written into it. */
  async run(feeds: Record<string, OrtTensor>, fetches?: Record<string, OrtTensor | null>): Promise<Record<string, OrtTensor>> {
    // the values by slot: a decode step makes a few hundred, and what it makes per value is garbage the
    // inference thread's collector must take (on Bun each collection's freed pages fault back in)
    const values: (OrtTensor | undefined)[] = new Array(this.names.length);
    for (const name in feeds) {
      const i = this.slots.get(name);
      if (i !== undefined) values[i] = feeds[name];
    }
    const { skip, handed, wanted, slots } = this.fetching(fetches ? Object.keys(fetches) : this.outputNames);
    const few = (feeds.input_ids?.dims.at(-1) ?? Infinity) <= ONE_THREAD_NEW;
    const key = shapesOf(feeds);
    const reused = this.scratch.get(key);
    const made: (OrtTensor | undefined)[] | undefined = reused ? undefined : new Array(this.names.length);
    const given = (i: number) => fetches?.[this.names[i]!] ?? (handed[i] ? null : reused?.[i] ?? null);
    const fitting = (i: number, size: number) => {
      const t = given(i);
      return t?.size === size ? t : undefined;
    };
    const keep = (i: number, t: OrtTensor) => {
      values[i] = t;
      if (made && !handed[i]) made[i] = t;
      return t;
    };
    const fresh = (dims: number[]) => new this.ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
    const writes: Writes = { fitting, fresh, keep };
    for (const s of this.steps) {
      if (skip.has(s)) continue;
      if (s.kind === 'graph' && s.attention && this.attend(s.attention, values, writes)) continue;
      if (s.kind === 'graph') {
        const ins: Record<string, OrtTensor> = {};
        for (let j = 0; j < s.inputs.length; j++) ins[s.inputs[j]!] = values[s.ins[j]!]!;
        const outs: Record<string, OrtTensor | null> = {};
        for (let j = 0; j < s.outputs.length; j++) outs[s.outputs[j]!] = given(s.outs[j]!);
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
        for (let j = 0; j < s.outputs.length; j++) {
          const t = got[s.outputs[j]!];
          if (t) keep(s.outs[j]!, t);
        }
        continue;
      }
      for (const c of s.calls) c.run(values[c.x]!, c.other < 0 ? undefined : values[c.other], writes);
    }
    if (made && made.reduce((n, t) => n + (t ? (t.data as ArrayBufferView).byteLength : 0), 0) <= SCRATCH_BYTES) {
      if (this.scratch.size >= SCRATCH_SETS) this.scratch.delete(this.scratch.keys().next().value!);
      this.scratch.set(key, made);
    }
    const out: Record<string, OrtTensor> = {};
    // a name no step makes (nothing of the graph's outputs) is answered undefined
    for (let j = 0; j < wanted.length; j++) out[wanted[j]!] = values[slots[j]!]!;
    return out;
  }

  /** What runs fetching `wanted` share, by the outputs they fetch. */
  private fetchings = new Map<string, Fetching>();

  /**
   * The graph stages a run fetching `wanted` skips: those whose outputs neither it nor a later step reads.
   * And which slots it hands back (never kept for another run).
   */
  private fetching(wanted: string[]): Fetching {
    const key = wanted.join('\n');
    let f = this.fetchings.get(key);
    if (f) return f;
    const skip = new Set<Step>();
    const needed = new Set(wanted);
    for (const s of [...this.steps].reverse()) {
      if (s.kind === 'kernels') {
        for (const c of s.calls) c.inputs.forEach((x) => needed.add(x));
      } else if (s.outputs.some((x) => needed.has(x))) s.inputs.forEach((x) => needed.add(x));
      else skip.add(s);
    }
    const slots = wanted.map((n) => this.slots.get(n) ?? -1);
    const handed = this.names.map((_, i) => slots.includes(i));
    f = { skip, handed, wanted, slots };
    if (this.fetchings.size < SCRATCH_SETS) this.fetchings.set(key, f);
    return f;
  }

  /**
   * A layer's attention on the kernel, where the values have the shapes the stage was recognized for and each
   * row adds few positions; false (nothing made) to leave it to the stage's session.
   */
  private attend(
    at: Attend,
    values: (OrtTensor | undefined)[],
    { fitting, keep, fresh }: Writes,
  ): boolean {
    const a = at.stage;
    const q = values[at.in[0]!], k = values[at.in[1]!], v = values[at.in[2]!], pos = values[at.in[3]!], cos = values[at.in[4]!];
    const sin = values[at.in[5]!], pastK = values[at.in[6]!], pastV = values[at.in[7]!], mask = values[at.in[8]!];
    if (!q || !k || !v || !pos || !cos || !sin || !pastK || !pastV || !mask || q.dims.length !== 3) return false;
    const b = q.dims[0]!, s = q.dims[1]!, d = a.headSize, past = pastK.dims[2]!;
    if (
      !dimsAre(q, 'float32', b, s, a.heads * d) || !dimsAre(k, 'float32', b, s, a.kvHeads * d) ||
      !dimsAre(v, 'float32', b, s, a.kvHeads * d) || !dimsAre(pos, 'int64', b, s) || !dimsAre(cos, 'float32', cos.dims[0]!, d / 2) ||
      !dimsAre(sin, 'float32', cos.dims[0]!, d / 2) || !dimsAre(pastK, 'float32', b, a.kvHeads, past, d) ||
      !dimsAre(pastV, 'float32', b, a.kvHeads, past, d) || !dimsAre(mask, 'float32', b, 1, s, past + s)
    ) return false;
    const out = keep(at.out, fitting(at.out, q.size) ?? fresh([b, s, a.heads * d]));
    const size = k.size;
    const newKey = (i: number) => keep(i, fitting(i, size) ?? fresh([b, a.kvHeads, s, d])).data as Float32Array;
    const newK = at.keys.length ? newKey(at.keys[0]!) : new Float32Array(size);
    const newV = at.values.length ? newKey(at.values[0]!) : new Float32Array(size);
    const f = (t: OrtTensor) => t.data as Float32Array;
    const arrays = {
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
    };
    this.kernels.attention(arrays, s, a.heads, a.kvHeads, d, a.divisor, this.threads);
    for (let i = 1; i < at.keys.length; i++) newKey(at.keys[i]!).set(newK);
    for (let i = 1; i < at.values.length; i++) newKey(at.values[i]!).set(newV);
    return true;
  }

  async release(): Promise<void> {
    await Promise.all(this.steps.flatMap((s) => (s.kind === 'graph' ? [s.session.release(), s.wide?.release()] : [])));
  }
}

/**
 * Slot y's tensor of `n` columns for each row of x (all but x's last dimension): the one handed or kept where it
 * fits, else a new one.
 */
function rows(y: number, x: OrtTensor, n: number, { fitting, fresh, keep }: Writes): Float32Array {
  const m = x.size / x.dims[x.dims.length - 1]!;
  return keep(y, fitting(y, m * n) ?? fresh([...x.dims.slice(0, -1), n])).data as Float32Array;
}

/**
 * Each joined product's own output from the joined one's columns (m rows of n, the rows' leading dimensions
 * `dims` but the last): for one row a view of them, for more a copy (each row's columns are apart).
 */
function part(
  ort: OrtWeb,
  parts: { y: number; n: number }[],
  all: Float32Array,
  dims: readonly number[],
  m: number,
  n: number,
  w: Writes,
): void {
  const lead = dims.slice(0, -1);
  let at = 0;
  for (const p of parts) {
    if (m === 1) w.keep(p.y, new ort.Tensor('float32', all.subarray(at, at + p.n), [...lead, p.n]));
    else {
      const y = w.keep(p.y, w.fitting(p.y, m * p.n) ?? w.fresh([...lead, p.n])).data as Float32Array;
      for (let r = 0; r < m; r++) y.set(all.subarray(r * n + at, r * n + at + p.n), r * p.n);
    }
    at += p.n;
  }
}

/**
 * Slot y: the last k positions of x [b, s, ...] on its axis 1, k = count's value where above 0, else s; counted
 * back from s as ONNX's Gather takes Range(s - k, s) (a position before 0 wraps around once, as its negative
 * indices do).
 */
function lastPositions(
  x: OrtTensor,
  count: OrtTensor,
  y: number,
  { keep, fitting, fresh }: Writes,
): void {
  const [b = 1, s = 1, ...rest] = x.dims, inner = rest.reduce((a, v) => a * v, 1);
  const asked = Number((count.data as BigInt64Array)[0]), k = asked > 0 ? asked : s;
  if (x.dims.length < 2 || k > 2 * s) throw new RangeError(`num_logits_to_keep ${asked} does not fit ${s} positions`);
  const from = x.data as Float32Array, out = keep(y, fitting(y, b * k * inner) ?? fresh([b, k, ...rest])).data as Float32Array;
  for (let r = 0; r < b; r++) {
    for (let i = 0; i < k; i++) {
      const at = s - k + i < 0 ? 2 * s - k + i : s - k + i;
      out.set(from.subarray((r * s + at) * inner, (r * s + at + 1) * inner), (r * k + i) * inner);
    }
  }
}

/** Whether `t` is of `type` and shape `dims` (checked where a step's shapes are, without an array of them). */
function dimsAre(t: OrtTensor, type: string, d0: number, d1: number, d2?: number, d3?: number): boolean {
  const n = d3 !== undefined ? 4 : d2 !== undefined ? 3 : 2, x = t.dims;
  return t.type === type && x.length === n && x[0] === d0 && x[1] === d1 && (n < 3 || x[2] === d2) && (n < 4 || x[3] === d3);
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

/**
 * The feeds' names and shapes, and the values of scalars (a switch, a count: `num_logits_to_keep`). Not the
 * values of other tensors of one element: a lone row's decode step feeds its token and position as [1, 1], and
 * with those in the key no step's buffers were ever reused.
 */
function shapesOf(feeds: Record<string, OrtTensor>): string {
  let key = '';
  for (const name in feeds) {
    const t = feeds[name]!;
    key += `${name}:${t.dims.join(',')}${t.dims.length === 0 ? `=${(t.data as ArrayLike<unknown>)[0]}` : ''};`;
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
