/**
 * 8-bit files whose weights are unsigned. transformers.js' quantizer stores every weight of a graph as uint8
 * when the graph has a Conv (vision encoders, Whisper's encoder) or one of ONNX Runtime's attention
 * operators (graphs onnxruntime-genai built), because onnxruntime-web has no int8 ConvInteger. On a CPU with
 * VNNI, ONNX Runtime multiplies uint8 activations by uint8 weights about half as fast as by int8 ones
 * (BENCHMARKS.md, "8-bit files with unsigned weights"). A weight and its zero point moved down by 128 give
 * the same differences, so where a CPU session is created on such a CPU, each `MatMulInteger`'s uint8
 * weight and zero point become int8 ones: the same integers are multiplied, the results are identical.
 * `ConvInteger` keeps its uint8 weights (its CPU kernel takes no others), and so does a weight read by
 * anything else.
 */
import {
  containsBytes,
  decodeFields,
  editedGraph,
  first,
  indexGraph,
  isExternal,
  modelGraph,
  ONNX,
  str,
  type Tensor,
  tensor,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';

/** The operator's name as a serialized model holds it. */
const MATMUL_INTEGER = new TextEncoder().encode('MatMulInteger');

/** Reads an initializer's external data (from the files beside the model). */
export type ExternalReader = (t: Tensor) => Uint8Array | undefined;

/** A uint8 initializer's values: raw data, the int32 field small tensors use, or its external data. */
function uint8Values(t: Tensor | undefined, external?: ExternalReader): Uint8Array | undefined {
  if (t?.dataType !== ONNX.dtype.UINT8) return undefined;
  if (isExternal(t)) return external?.(t);
  const raw = first(t.fields, ONNX.tensor.rawData)?.bytes;
  if (raw) return raw;
  const packed = first(t.fields, ONNX.tensor.int32Data);
  if (packed?.bytes) return Uint8Array.from(decodeVarints(packed.bytes));
  const single = t.fields.filter((f) => f.no === ONNX.tensor.int32Data && f.int !== undefined);
  const count = t.dims.reduce((a, b) => a * b, 1);
  return single.length === count ? Uint8Array.from(single, (f) => Number(f.int)) : undefined;
}

function decodeVarints(b: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0, v = 0, shift = 0; i < b.length; i++) {
    v |= (b[i]! & 0x7f) << shift;
    if (b[i]! & 0x80) shift += 7;
    else (out.push(v), (v = 0), (shift = 0));
  }
  return out;
}

/** uint8 values moved down by 128, as int8 bytes. */
function signed(u: Uint8Array): Uint8Array {
  const out = new Uint8Array(u.length);
  for (let i = 0; i < u.length; i++) out[i] = u[i]! ^ 0x80;
  return out;
}

/**
 * The model with the uint8 weights of its main graph's `MatMulInteger` nodes made int8, or undefined when
 * there is none. Weights stored as external data are read through `external`; without it they stay uint8.
 */
export function withSignedWeights(model: Uint8Array, external?: ExternalReader): { bytes: Uint8Array; weights: number } | undefined {
  if (!containsBytes(model, MATMUL_INTEGER)) return undefined;
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { fields, graph } = parsed;
  const { inits, nodes } = indexGraph(graph);
  const made = new Map<string, [string, string]>();
  const added: WireWriter[] = [];
  const edited = new Map<number, WireWriter>();
  const replaced = new Set<string>();
  const read = new Set<string>();
  for (const n of nodes) {
    const [a, b = '', aZero = '', bZero = ''] = n.inputs;
    const w = n.opType === 'MatMulInteger' && !n.domain ? uint8Values(inits.get(b), external) : undefined;
    const z = bZero ? uint8Values(inits.get(bZero), external) : new Uint8Array(1); // absent: 0
    if (!w || !z) {
      for (const i of n.inputs) read.add(i);
      continue;
    }
    let names = made.get(`${b}|${bZero}`);
    if (!names) {
      names = [`${b}_s8`, `${b}_s8_zero_point`];
      made.set(`${b}|${bZero}`, names);
      added.push(tensor(names[0], inits.get(b)!.dims, ONNX.dtype.INT8, signed(w)));
      added.push(tensor(names[1], bZero ? inits.get(bZero)!.dims : [], ONNX.dtype.INT8, signed(z)));
    }
    replaced.add(b);
    if (bZero) replaced.add(bZero);
    read.add(a!);
    if (aZero) read.add(aZero);
    const node = new WireWriter();
    for (const i of [a!, names[0], aZero, names[1]]) node.string(ONNX.node.input, i);
    for (const f of n.fields) if (f.no !== ONNX.node.input) node.field(f);
    edited.set(n.index, node);
  }
  if (!edited.size) return undefined;
  for (const f of graph) {
    if (f.no === ONNX.graph.output) read.add(str(first(decodeFields(f.bytes!), ONNX.valueInfo.name)?.bytes));
  }
  const drop = new Set([...replaced].filter((name) => !read.has(name)));
  const g = editedGraph(graph, { nodes: edited, drop, added });
  return { bytes: withGraph(fields, g).finish(), weights: made.size };
}
