/**
 * 4-bit weights on the native CPU. ONNX Runtime's `MatMulNBits` multiplies in fp32 (each block of weights
 * unpacked to floats) unless the node's `accuracy_level` is 4: then it quantizes the activations to int8 per
 * block and runs int8 dot-product kernels, as llama.cpp does for its 4-bit formats. transformers.js'
 * quantizer, which made the hub's q4 files, leaves the attribute unset (0, which ONNX Runtime runs as fp32),
 * and ONNX Runtime has no session option that changes it. So where a CPU session is created, each such node
 * is given level 4 (measured in BENCHMARKS.md, "4-bit files from the hub"). A level the file sets itself
 * (1 fp32, 2 fp16, 3 bf16) is kept, and so is a node with fp16 activations (q4f16 files, made for WebGPU).
 */
import { decodeFields, first, indexGraph, intAttr, modelGraph, ONNX, str, WireWriter, withGraph } from '../models/onnx-wire.ts';
import { hasMatMulNBits } from './wasm-q4.ts';
import { pointInto } from './decoder-graph.ts';

/** The level that selects the int8 kernels. */
export const INT8_ACTIVATIONS = 4;

/**
 * The model with every unset `accuracy_level` of a fp32 `MatMulNBits` set to 4, or undefined when there is
 * none. With `externalFile` (the model's own file name, `model` being that file's bytes), initializers stored
 * inline are written as external data pointing into that file instead of being copied.
 */
export function withInt8Activations(model: Uint8Array, externalFile?: string): { bytes: Uint8Array; nodes: number } | undefined {
  if (!hasMatMulNBits(model)) return undefined;
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { fields, graph } = parsed;
  const { inits, nodes } = indexGraph(graph);
  const edited = new Map<number, WireWriter>();
  for (const n of nodes) {
    if (n.opType !== 'MatMulNBits' || n.domain !== 'com.microsoft' || intAttr(n, 'accuracy_level')) continue;
    // the scales' type is the activations' (the operator's T1)
    if (inits.get(n.inputs[2] ?? '')?.dataType !== ONNX.dtype.FLOAT) continue;
    const w = new WireWriter();
    for (const f of n.fields) {
      if (f.no !== ONNX.node.attribute || str(first(decodeFields(f.bytes!), ONNX.attr.name)?.bytes) !== 'accuracy_level') w.field(f);
    }
    w.message(
      ONNX.node.attribute,
      new WireWriter().string(ONNX.attr.name, 'accuracy_level').varint(ONNX.attr.i, INT8_ACTIVATIONS).varint(
        ONNX.attr.type,
        ONNX.attrType.INT,
      ),
    );
    edited.set(n.index, w);
  }
  if (!edited.size) return undefined;
  const g = new WireWriter();
  graph.forEach((f, index) => {
    if (edited.has(index)) g.message(ONNX.graph.node, edited.get(index)!);
    else if (f.no === ONNX.graph.initializer && externalFile) {
      g.message(ONNX.graph.initializer, pointInto(model, decodeFields(f.bytes!), externalFile));
    } else g.field(f);
  });
  return { bytes: withGraph(fields, g).finish(), nodes: edited.size };
}
