/**
 * Weight products that read the same input, joined into one (a layer's query, key and value projections): one
 * weight of their columns side by side, so that a decode step streams it in one kernel call instead of three.
 * Three small calls each paid the call, the threads' hand-over and a cold start of the memory reads (the key
 * and value projections of a 0.5B model are 64 KB each). Every column is computed as it was alone: the input is
 * quantized once per row either way, and each column's sum reads only its own weights.
 */
import type { Kernel, Q4Product, Q8Product, WeightProduct } from './weight-split.ts';

/** Products of one input in one call: `product` holds their columns in order, `parts` names each one's output. */
export interface JoinedProducts {
  kind: 'joined';
  product: WeightProduct;
  bias?: Float32Array;
  parts: { output: string; n: number }[];
  /** The products joined, as the cut holds them. */
  from: WeightProduct[];
}

type ProductKernel = Extract<Kernel, { kind: 'product' }>;

/**
 * A stage's calls with each run of adjacent products that read the same input, of one width and k (8-bit: one
 * zero point), each with a bias or none, joined (`output` names the joined value: its parts' outputs joined).
 */
export function joinProducts(calls: Kernel[]): (Kernel | JoinedProducts)[] {
  const out: (Kernel | JoinedProducts)[] = [];
  for (let i = 0; i < calls.length;) {
    const run = [calls[i]!];
    while (i + run.length < calls.length && joins(run[0]!, calls[i + run.length]!)) run.push(calls[i + run.length]!);
    i += run.length;
    if (run.length === 1) out.push(run[0]!);
    else out.push(joined(run as ProductKernel[]));
  }
  return out;
}

function joins(a: Kernel, b: Kernel): boolean {
  if (a.kind !== 'product' || b.kind !== 'product') return false;
  const [p, q] = [a.product, b.product];
  return p.input === q.input && p.bits === q.bits && p.k === q.k && !a.bias === !b.bias &&
    (p.bits === 4 || (q.bits === 8 && p.zeroPoint === q.zeroPoint));
}

function joined(run: ProductKernel[]): JoinedProducts {
  const ps = run.map((c) => c.product);
  const output = ps.map((p) => p.output).join('+');
  const bias = run[0]!.bias && concat(run.map((c) => c.bias!), Float32Array);
  return { kind: 'joined', product: joinedWeights(ps, output), bias, parts: ps.map((p) => ({ output: p.output, n: p.n })), from: ps };
}

/** One product of `ps`' columns in order (the same input and k; 8-bit: one zero point). */
export function joinedWeights(ps: WeightProduct[], output: string): WeightProduct {
  const { input, k } = ps[0]!, n = ps.reduce((a, p) => a + p.n, 0);
  const scales = concat(ps.map((p) => p.scales), Float32Array);
  if (ps[0]!.bits === 4) {
    // MatMulNBits' layout is column after column: [n][k / 32][16 bytes], scales [n][k / 32]
    return { bits: 4, input, output, k, n, b: concat((ps as Q4Product[]).map((p) => p.b), Uint8Array), scales };
  }
  // MatMulInteger's is row after row, [k][n]: each row of k gets every product's columns in turn
  const eight = ps as Q8Product[];
  const w = new Int8Array(k * n);
  let at = 0;
  for (const p of eight) {
    for (let r = 0; r < k; r++) w.set(p.w.subarray(r * p.n, (r + 1) * p.n), r * n + at);
    at += p.n;
  }
  return { bits: 8, input, output, k, n, w, scales, zeroPoint: eight[0]!.zeroPoint };
}

function concat<T extends Uint8Array | Float32Array>(parts: T[], Type: { new (n: number): T }): T {
  const out = new Type(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p as never, at), at += p.length;
  return out;
}
