/**
 * A decoder's 4-bit LM head taken out of its graph, to run on svc's own kernel (src/runtime/kernels.ts).
 *
 * The LM head is the widest weight a decode step reads (vocabulary × hidden size: a quarter of a 0.5B
 * model's bytes), and ONNX Runtime's 4-bit kernel reads it well below this CPU's memory rate, worst with
 * several rows (continuous batching): BENCHMARKS.md, "Text generation: own 4-bit LM head". Where the graph's
 * `logits` come from one `MatMulNBits` (4 bits, blocks of 32, no zero points), that node and its weights are
 * left out of the graph, its input (the last hidden states) becomes a graph output in place of `logits`, and
 * the inference thread multiplies it by the weights it packed once at load. The kernel quantizes the hidden
 * states to int8 per block of 32 as ONNX Runtime's level-4 kernel does, so the logits are ONNX Runtime's to
 * float rounding (test/services/inference/lm-head.test.ts).
 */
import {
  decodeFields,
  first,
  indexGraph,
  intAttr,
  modelGraph,
  ONNX,
  str,
  type Tensor,
  tensorValueInfo,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';

/** The graph output the head made. */
export const LOGITS = 'logits';

/** The head's weights as MatMulNBits holds them: `b` [n, k/32, 16] nibbles, `scales` [n · k/32]. */
export interface LmHead {
  /** The value the head multiplies (now a graph output): [..., k]. */
  input: string;
  k: number;
  n: number;
  b: Uint8Array;
  scales: Float32Array;
}

/**
 * The model without its 4-bit LM head, and the head; undefined where `logits` is not made by one plain
 * 4-bit `MatMulNBits` of the main graph. `weight` reads an initializer's bytes (inline ones are read here).
 */
export function cutLmHead(
  model: Uint8Array,
  weight: (t: Tensor) => Uint8Array | undefined = () => undefined,
): { bytes: Uint8Array; head: LmHead } | undefined {
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { inits, nodes } = indexGraph(parsed.graph);
  const n = nodes.find((x) => x.outputs[0] === LOGITS);
  if (!n || n.opType !== 'MatMulNBits' || n.domain !== 'com.microsoft' || n.outputs.length !== 1) return undefined;
  const [input, bName, sName, ...rest] = n.inputs;
  const k = intAttr(n, 'K') ?? 0, cols = intAttr(n, 'N') ?? 0;
  if (rest.some(Boolean) || (intAttr(n, 'bits') ?? 4) !== 4 || intAttr(n, 'block_size') !== 32 || !k || k % 32 || !cols) return undefined;
  const b = inits.get(bName!), s = inits.get(sName!);
  if (b?.dataType !== ONNX.dtype.UINT8 || s?.dataType !== ONNX.dtype.FLOAT) return undefined;
  const bBytes = bytesOf(b, weight), sBytes = bytesOf(s, weight);
  if (bBytes?.length !== cols * (k / 32) * 16 || sBytes?.length !== cols * (k / 32) * 4) return undefined;
  // weights another node reads too (a tied embedding) stay in the graph
  const read = new Set(nodes.filter((x) => x !== n).flatMap((x) => x.inputs));
  const drop = new Set([bName!, sName!].filter((x) => !read.has(x)));
  const nameOf = (bytes: Uint8Array, no: number) => str(first(decodeFields(bytes), no)?.bytes);
  const graph = new WireWriter();
  parsed.graph.forEach((f, index) => {
    if (index === n.index || (f.no === ONNX.graph.initializer && drop.has(nameOf(f.bytes!, ONNX.tensor.name)))) return;
    if (f.no === ONNX.graph.output && nameOf(f.bytes!, ONNX.valueInfo.name) === LOGITS) {
      graph.message(ONNX.graph.output, tensorValueInfo(input!, ONNX.dtype.FLOAT));
    } else graph.field(f);
  });
  const scales = new Float32Array(sBytes.length / 4);
  new Uint8Array(scales.buffer).set(sBytes);
  return { bytes: withGraph(parsed.fields, graph).finish(), head: { input: input!, k, n: cols, b: bBytes, scales } };
}

function bytesOf(t: Tensor, weight: (t: Tensor) => Uint8Array | undefined): Uint8Array | undefined {
  return first(t.fields, ONNX.tensor.rawData)?.bytes ?? weight(t);
}
