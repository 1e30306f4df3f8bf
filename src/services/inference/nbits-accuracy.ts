/**
 * 4-bit weights on the native CPU. ONNX Runtime's `MatMulNBits` multiplies in fp32 (each block of weights
 * unpacked to floats) unless the node's `accuracy_level` is 4: then it quantizes the activations to int8 per
 * block and runs int8 dot-product kernels, as llama.cpp does for its 4-bit formats. transformers.js'
 * quantizer, which made the hub's q4 files, leaves the attribute unset (0, which ONNX Runtime runs as fp32),
 * and ONNX Runtime has no session option that changes it. So where a CPU session is created, each such node
 * is given level 4 (measured in BENCHMARKS.md, "4-bit files from the hub"). A level the file sets itself
 * (1 fp32, 2 fp16, 3 bf16) is kept, and so is a node with fp16 activations (q4f16 files, made for WebGPU).
 */
import {
  decodeFields,
  editedGraph,
  first,
  type GraphNode,
  hasSubgraph,
  indexGraph,
  intAttr,
  modelGraph,
  ONNX,
  str,
  type Tensor,
  type WireField,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';
import { hasMatMulNBits } from './wasm-q4.ts';

/** The level that selects the int8 kernels. */
export const INT8_ACTIVATIONS = 4;

/**
 * The model with every unset `accuracy_level` of a fp32 `MatMulNBits` set to 4 (in subgraphs too: merged
 * decoders keep their layers in the branches of an `If`), or undefined when there is none.
 */
export function withInt8Activations(model: Uint8Array): { bytes: Uint8Array; nodes: number } | undefined {
  if (!hasMatMulNBits(model)) return undefined;
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const edit = editGraph(parsed.graph, new Map());
  return edit.nodes ? { bytes: withGraph(parsed.fields, edit.graph).finish(), nodes: edit.nodes } : undefined;
}

/** A graph with its nodes edited; `outer` holds the initializers of the graphs around it. */
function editGraph(graph: WireField[], outer: Map<string, Tensor>): { graph: WireWriter; nodes: number } {
  const { inits, nodes } = indexGraph(graph);
  const scope = new Map([...outer, ...inits]);
  const edited = new Map<number, WireWriter>();
  let count = 0;
  for (const n of nodes) {
    const e = editNode(n, scope);
    if (!e) continue;
    edited.set(n.index, e.node);
    count += e.nodes;
  }
  const g = editedGraph(graph, { nodes: edited });
  return { graph: g, nodes: count };
}

/** The node given level 4, or with its subgraphs edited; undefined when nothing in it changes. */
function editNode(n: GraphNode, scope: Map<string, Tensor>): { node: WireWriter; nodes: number } | undefined {
  if (n.opType === 'MatMulNBits' && n.domain === 'com.microsoft') {
    // the scales' type is the activations' (the operator's T1)
    if (intAttr(n, 'accuracy_level') || scope.get(n.inputs[2] ?? '')?.dataType !== ONNX.dtype.FLOAT) return undefined;
    const w = new WireWriter();
    for (const f of n.fields) if (f.no !== ONNX.node.attribute || attrName(f) !== 'accuracy_level') w.field(f);
    const level = new WireWriter().string(ONNX.attr.name, 'accuracy_level').varint(ONNX.attr.i, INT8_ACTIVATIONS);
    return { node: w.message(ONNX.node.attribute, level.varint(ONNX.attr.type, ONNX.attrType.INT)), nodes: 1 };
  }
  if (!hasSubgraph(n)) return undefined;
  let count = 0;
  const w = new WireWriter();
  for (const f of n.fields) {
    if (f.no !== ONNX.node.attribute) {
      w.field(f);
      continue;
    }
    const a = new WireWriter();
    for (const af of decodeFields(f.bytes!)) {
      if (af.no !== ONNX.attr.g && af.no !== ONNX.attr.graphs) a.field(af);
      else {
        const e = editGraph(decodeFields(af.bytes!), scope);
        count += e.nodes;
        a.message(af.no, e.graph);
      }
    }
    w.message(ONNX.node.attribute, a);
  }
  return count ? { node: w, nodes: count } : undefined;
}

const attrName = (f: WireField) => str(first(decodeFields(f.bytes!), ONNX.attr.name)?.bytes);
