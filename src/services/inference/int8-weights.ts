/**
 * 8-bit weights in the form ONNX Runtime's CPU kernels multiply best on this CPU. A weight and its zero point
 * moved by 128 give the same differences, so each `MatMulInteger`'s weight and zero point can change between
 * uint8 and int8 with the same integers multiplied and identical results:
 * - uint8 to int8 on x64 with VNNI. transformers.js' quantizer stores every weight of a graph as uint8 when the
 *   graph has a Conv (vision encoders, Whisper's encoder) or one of ONNX Runtime's attention operators (graphs
 *   onnxruntime-genai built), because onnxruntime-web has no int8 ConvInteger; with VNNI, ONNX Runtime
 *   multiplies uint8 activations by uint8 weights about half as fast as by int8 ones (BENCHMARKS.md, "8-bit
 *   files with unsigned weights").
 * - int8 to uint8 on x64 without VNNI, where ONNX Runtime's uint8-by-int8 product adds pairs of products in 16
 *   bits, which saturate (255 * 127 twice gives 32767, not 64770): on a random-weight model, q8 logits fell to
 *   cosine 0.87 with fp32 from 0.98. uint8 by uint8 it computes exactly.
 * `ConvInteger` keeps its weights (its CPU kernel takes uint8 only), and so does a weight read by anything else.
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

/** An initializer's bytes if it is of `dtype`: raw data, the int32 field small tensors use, or its external data. */
function byteValues(t: Tensor | undefined, dtype: number, external?: ExternalReader): Uint8Array | undefined {
  if (t?.dataType !== dtype) return undefined;
  if (isExternal(t)) return external?.(t);
  const raw = first(t.fields, ONNX.tensor.rawData)?.bytes;
  if (raw) return raw;
  const packed = first(t.fields, ONNX.tensor.int32Data);
  if (packed?.bytes) return Uint8Array.from(decodeVarints(packed.bytes));
  const single = t.fields.filter((f) => f.no === ONNX.tensor.int32Data && f.int !== undefined);
  const count = t.dims.reduce((a, b) => a * b, 1);
  // the low byte: a negative int8 is a 64-bit two's complement varint
  return single.length === count ? Uint8Array.from(single, (f) => Number(f.int! & 0xffn)) : undefined;
}

function decodeVarints(b: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0, v = 0, shift = 0; i < b.length; i++) {
    if (shift < 32) v |= (b[i]! & 0x7f) << shift; // a negative int8 takes 10 bytes: its low byte is in the first two
    if (b[i]! & 0x80) shift += 7;
    else (out.push(v), (v = 0), (shift = 0));
  }
  return out; // Uint8Array.from keeps the low byte
}

/** Values moved by 128 between uint8 and int8 (either way, the same bit flipped). */
function moved(u: Uint8Array): Uint8Array {
  const out = new Uint8Array(u.length);
  for (let i = 0; i < u.length; i++) out[i] = u[i]! ^ 0x80;
  return out;
}

/** The model with its `MatMulInteger` weights made int8 (see above), or undefined when there is none to make. */
export const withSignedWeights = (model: Uint8Array, external?: ExternalReader) => withWeightsAs(ONNX.dtype.INT8, model, external);

/** The model with its `MatMulInteger` weights made uint8 (see above), or undefined when there is none to make. */
export const withUnsignedWeights = (model: Uint8Array, external?: ExternalReader) => withWeightsAs(ONNX.dtype.UINT8, model, external);

/**
 * The model with the weights of its main graph's `MatMulInteger` nodes made `to` (int8 or uint8) from the other,
 * or undefined when there is none. Weights stored as external data are read through `external`; without it
 * they stay as they are.
 */
function withWeightsAs(to: number, model: Uint8Array, external?: ExternalReader): { bytes: Uint8Array; weights: number } | undefined {
  const from = to === ONNX.dtype.INT8 ? ONNX.dtype.UINT8 : ONNX.dtype.INT8;
  const suffix = to === ONNX.dtype.INT8 ? 's8' : 'u8';
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
    const w = n.opType === 'MatMulInteger' && !n.domain ? byteValues(inits.get(b), from, external) : undefined;
    const z = bZero ? byteValues(inits.get(bZero), from, external) : new Uint8Array(1); // absent: 0
    if (!w || !z) {
      for (const i of n.inputs) read.add(i);
      continue;
    }
    let names = made.get(`${b}|${bZero}`);
    if (!names) {
      names = [`${b}_${suffix}`, `${b}_${suffix}_zero_point`];
      made.set(`${b}|${bZero}`, names);
      added.push(tensor(names[0], inits.get(b)!.dims, to, moved(w)));
      added.push(tensor(names[1], bZero ? inits.get(bZero)!.dims : [], to, moved(z)));
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
