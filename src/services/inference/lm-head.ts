/**
 * A decoder's LM head taken out of its graph, to run on svc's own kernels (src/runtime/kernels.ts).
 *
 * The LM head is the widest weight a decode step reads (vocabulary × hidden size: a quarter of a 0.5B
 * model's bytes), and ONNX Runtime's kernels read it well below this CPU's memory rate, its 4-bit one most,
 * and worst with several rows (continuous batching): BENCHMARKS.md, "Text generation: svc's own kernels (LM head, 4-bit MLPs)".
 * Where the graph's `logits` come from one 4-bit `MatMulNBits` (blocks of 32, no zero points) or from one
 * dynamic 8-bit product (as q8 files hold their MatMuls), those nodes and their weights are left out of the
 * graph, the head's input (the last hidden states) becomes a graph output in place of `logits`, and the
 * inference thread multiplies it by the weights it packed once at load. The kernels quantize the hidden
 * states as ONNX Runtime does (int8 per block of 32 for 4 bits, as its level 4; to uint8 for 8 bits, as
 * DynamicQuantizeLinear, though each position by itself where the graph takes the whole tensor together), so a
 * position's logits are those ONNX Runtime gives it alone, to float rounding (test/services/inference/lm-head.test.ts).
 */
import {
  decodeFields,
  first,
  type GraphNode,
  indexGraph,
  modelGraph,
  ONNX,
  str,
  type Tensor,
  tensorValueInfo,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';
import type { NativeKernels } from '../../runtime/kernels.ts';
import { type Constants, q4Product, q8Product } from './weight-split.ts';

/** The graph output the head made. */
export const LOGITS = 'logits';

/** The head: what it multiplies and its weights, as the graph held them. */
export type LmHead =
  & {
    /** The value the head multiplies (now a graph output): [..., k]. */
    input: string;
    k: number;
    n: number;
  }
  & (
    /** MatMulNBits: `b` [n, k/32, 16] nibbles (low first), `scales` [n · k/32]. */
    | { bits: 4; b: Uint8Array; scales: Float32Array }
    /** MatMulInteger after DynamicQuantizeLinear: `w` [k, n], one scale a column, one zero point. */
    | { bits: 8; w: Int8Array; scales: Float32Array; zeroPoint: number }
  );

/** A head found in the graph: the nodes that make it (to leave out), the weights they read. */
interface Found {
  nodes: GraphNode[];
  weights: string[];
  head: LmHead;
}

/**
 * The model without its LM head, and the head; undefined where `logits` is not made by one plain 4-bit
 * `MatMulNBits` or one dynamic 8-bit product (DynamicQuantizeLinear → MatMulInteger → Cast → Mul by the
 * two scales) of the main graph. `weight` reads an initializer's bytes (inline ones are read here).
 */
export function cutLmHead(
  model: Uint8Array,
  weight: (t: Tensor) => Uint8Array | undefined = () => undefined,
): { bytes: Uint8Array; head: LmHead } | undefined {
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { inits, nodes } = indexGraph(parsed.graph);
  const made = new Map(nodes.flatMap((n) => n.outputs.map((o) => [o, n] as const)));
  const last = made.get(LOGITS);
  const found = last && (nbitsHead(last, inits, weight) ?? int8Head(last, { made, inits, weight }));
  if (!found) return undefined;
  // nothing else may read what the cut nodes make; weights another node reads too (a tied embedding) stay
  const cut = new Set(found.nodes);
  const rest = nodes.filter((x) => !cut.has(x));
  const read = new Set(rest.flatMap((x) => x.inputs));
  if (found.nodes.some((x) => x.outputs.some((o) => o !== LOGITS && read.has(o)))) return undefined;
  const drop = new Set(found.weights.filter((x) => !read.has(x)));
  const at = new Set(found.nodes.map((x) => x.index));
  const nameOf = (b: Uint8Array, no: number) => str(first(decodeFields(b), no)?.bytes);
  const graph = new WireWriter();
  parsed.graph.forEach((f, index) => {
    if (at.has(index) || (f.no === ONNX.graph.initializer && drop.has(nameOf(f.bytes!, ONNX.tensor.name)))) return;
    if (f.no === ONNX.graph.output && nameOf(f.bytes!, ONNX.valueInfo.name) === LOGITS) {
      graph.message(ONNX.graph.output, tensorValueInfo(found.head.input, ONNX.dtype.FLOAT));
    } else graph.field(f);
  });
  return { bytes: withGraph(parsed.fields, graph).finish(), head: found.head };
}

/** `logits` from one MatMulNBits with 4 bits in blocks of 32 and no zero points. */
function nbitsHead(n: GraphNode, inits: Map<string, Tensor>, weight: (t: Tensor) => Uint8Array | undefined): Found | undefined {
  const p = q4Product(n, inits, weight);
  return p && { nodes: [n], weights: n.inputs.slice(1, 3), head: { bits: 4, input: p.input, k: p.k, n: p.n, b: p.b, scales: p.scales } };
}

/** `logits` from one dynamic 8-bit product (./weight-split.ts), its DynamicQuantizeLinear its own. */
function int8Head(mul: GraphNode, g: Constants): Found | undefined {
  const p = q8Product(mul, g);
  if (!p) return undefined;
  const { input, k, n, w, scales, zeroPoint } = p.product;
  return { nodes: [...p.nodes, p.quantize], weights: p.weights, head: { bits: 8, input, k, n, w, scales, zeroPoint } };
}

/** The head's product on svc's kernel: its weights packed once, then y [m, n] = x [m, k] × W per call. */
export function headProduct(h: LmHead, kernels: NativeKernels, threads: number): (x: Float32Array, m: number, y: Float32Array) => void {
  // the graph's next run follows the head: its ONNX Runtime threads get the cores the kernels' threads held
  if (h.bits === 4) {
    const w = kernels.packQ4(h.b, h.scales, h.k, h.n);
    return (x, m, y) => (kernels.matmulQ4(w, x, m, y, threads), kernels.rest());
  }
  // each position's hidden state quantized by itself, as the decoder's own 8-bit products (./split-session.ts)
  const w = kernels.packQ8(h.w, h.scales, h.k, h.n, h.zeroPoint);
  return (x, m, y) => (kernels.matmulQ8(w, x, m, y, threads, false, m), kernels.rest());
}
