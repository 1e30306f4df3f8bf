/**
 * Embedding tables of 4-bit files from the hub, on WASM. transformers.js' quantizer, which made them, leaves
 * Gather alone, so a q4 file keeps its token embeddings in fp32: for Qwen2.5-0.5B that is 544 MB of its 786.
 * onnxruntime-web holds every weight in its own memory (natively, ONNX Runtime maps the file, so untouched
 * rows cost nothing), and a decode step reads one row of the table, so holding it as int8 rows with one
 * scale (as svc's own quantizer writes q4 files, and as ONNX Runtime's dynamic quantization writes the
 * hub's q8 ones) costs no speed and a quarter of the memory. A table stored outside the file, or read by
 * anything but its Gather, stays as it is.
 */
import { int8GatherNodes, int8Table } from '../models/onnx-quantize.ts';
import {
  all,
  decodeFields,
  editedGraph,
  first,
  hasSubgraph,
  indexGraph,
  intAttr,
  isExternal,
  modelGraph,
  ONNX,
  onnxOpset,
  str,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';
import { hasMatMulNBits } from './wasm-q4.ts';

/**
 * The model with the fp32 tables of its main graph's Gathers held as int8, when it is a 4-bit graph (it has
 * MatMulNBits); undefined otherwise or when no table qualifies.
 */
export function withInt8Embeddings(model: Uint8Array): { bytes: Uint8Array; tables: number } | undefined {
  if (!hasMatMulNBits(model)) return undefined;
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { fields, graph } = parsed;
  // DequantizeLinear with an int8 zero point needs opset 10
  if (onnxOpset(fields) < 10) return undefined;
  const { inits, nodes } = indexGraph(graph);
  // names a subgraph reads are not listed as its node's inputs: such a graph is left alone
  if (nodes.some(hasSubgraph)) return undefined;
  const readers = new Map<string, number>();
  for (const n of nodes) for (const i of n.inputs) readers.set(i, (readers.get(i) ?? 0) + 1);
  for (const f of all(graph, ONNX.graph.output)) readers.set(str(first(decodeFields(f.bytes!), ONNX.valueInfo.name)?.bytes), Infinity);
  const edited = new Map<number, WireWriter[]>();
  const added: WireWriter[] = [];
  const gone = new Set<string>();
  for (const n of nodes) {
    const t = inits.get(n.inputs[0] ?? '');
    if (n.opType !== 'Gather' || n.domain || (intAttr(n, 'axis') ?? 0) !== 0 || !t || readers.get(t.name) !== 1) continue;
    const raw = first(t.fields, ONNX.tensor.rawData)?.bytes;
    if (t.dims.length !== 2 || t.dataType !== ONNX.dtype.FLOAT || isExternal(t) || raw?.byteLength !== t.dims[0]! * t.dims[1]! * 4) {
      continue;
    }
    // read where it lies in the file's bytes: a table can be half a gigabyte
    for (const [, w] of int8Table(t.name, t.dims, new DataView(raw.buffer, raw.byteOffset, raw.byteLength))) added.push(w);
    edited.set(n.index, int8GatherNodes(`svc_embed_${n.index}`, t.name, n.inputs[1]!, n.outputs[0]!));
    gone.add(t.name);
  }
  if (!edited.size) return undefined;
  const g = editedGraph(graph, { nodes: edited, drop: gone, added });
  return { bytes: withGraph(fields, g).finish(), tables: edited.size };
}
