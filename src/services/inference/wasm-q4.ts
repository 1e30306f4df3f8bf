/**
 * 4-bit weights on onnxruntime-web. Its WASM build has no 4-bit kernel: MLAS gives `MatMulNBits` a fast
 * path only on x64, ARM64 and a few other native targets, and everywhere else the operator dequantizes its
 * whole weight to fp32 on every call (for a 0.5B model, 2 GB written per decoded token: under 1 token/s).
 * So before a q4 graph becomes a WASM session, each such weight is turned into the int8 form the q8 graphs
 * use (DynamicQuantizeLinear + MatMulInteger, one scale per output column), which WASM runs with SIMD.
 *
 * The int8 values are requantized from the 4-bit ones: a 4-bit value is s·(q − z) with |q − z| ≤ 8, and
 * the column's int8 step is at most 8·max(s)/127, so the added rounding error is at most 1/32 of the
 * largest block scale of that column, a sixteenth of the 4-bit rounding error itself. The session then
 * holds one byte per weight instead of half a byte: the file stays q4, memory and speed are those of q8.
 */
import { f32bytes, int8MatMulNodes } from '../models/onnx-quantize.ts';
import {
  containsBytes,
  first,
  indexGraph,
  intAttr,
  modelGraph,
  ONNX,
  type Tensor,
  tensor,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';

/** The operator's name as a serialized model holds it. */
export const MATMUL_NBITS = new TextEncoder().encode('MatMulNBits');
/** Whether the serialized model mentions MatMulNBits at all (cheap check before parsing it). */
export const hasMatMulNBits = (model: Uint8Array): boolean => containsBytes(model, MATMUL_NBITS);

const raw = (t: Tensor | undefined) => (t ? first(t.fields, ONNX.tensor.rawData)?.bytes : undefined);

/**
 * int8 weight [K, N] and column scales from a 4-bit MatMulNBits weight ([N, blocks, block/2] nibbles, low
 * nibble first; one fp32 scale per block; zero points packed two per byte, or 8).
 */
export function int8FromNBits(
  packed: Uint8Array,
  scales: Float32Array,
  zeroPoints: Uint8Array | undefined,
  K: number,
  N: number,
  block: number,
): { q: Int8Array; scales: Float32Array } {
  const blocks = Math.ceil(K / block);
  const zpRow = Math.ceil(blocks / 2);
  const q = new Int8Array(K * N);
  const colScales = new Float32Array(N);
  const vals = new Float32Array(K);
  for (let n = 0; n < N; n++) {
    let max = 0;
    for (let b = 0; b < blocks; b++) {
      const s = scales[n * blocks + b]!;
      const z = zeroPoints ? (zeroPoints[n * zpRow + (b >> 1)]! >> ((b & 1) * 4)) & 15 : 8;
      const base = (n * blocks + b) * (block / 2);
      for (let j = 0; j < block && b * block + j < K; j++) {
        const byte = packed[base + (j >> 1)]!;
        const v = s * (((j & 1) ? byte >> 4 : byte & 15) - z);
        vals[b * block + j] = v;
        max = Math.max(max, Math.abs(v));
      }
    }
    const scale = Math.fround(Math.max(max, 1e-8) / 127);
    colScales[n] = scale;
    for (let k = 0; k < K; k++) q[k * N + n] = Math.max(-127, Math.min(127, Math.round(vals[k]! / scale)));
  }
  return { q, scales: colScales };
}

/**
 * The model with every convertible 4-bit MatMulNBits turned into an int8 MatMulInteger; undefined when
 * there is none (the bytes are used as they are). A node with a group index, non-fp32 scales or data
 * stored outside the file stays as it is.
 */
export function nbitsToInt8(model: Uint8Array): { bytes: Uint8Array; converted: number } | undefined {
  if (!hasMatMulNBits(model)) return undefined;
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { fields, graph } = parsed;
  const { inits, nodes } = indexGraph(graph);
  const replace = new Map<number, WireWriter[]>();
  const newInits: WireWriter[] = [];
  const replacedInputs = new Set<string>();
  for (const n of nodes) {
    if (n.opType !== 'MatMulNBits' || n.domain !== 'com.microsoft') continue;
    const [a, bName, sName, zpName = '', gIdx = '', bias = ''] = n.inputs;
    const K = intAttr(n, 'K'), N = intAttr(n, 'N'), bits = intAttr(n, 'bits') ?? 4, block = intAttr(n, 'block_size');
    const b = inits.get(bName!), s = inits.get(sName!), zp = zpName ? inits.get(zpName) : undefined;
    const bBytes = raw(b), sBytes = raw(s), zpBytes = raw(zp);
    if (!K || !N || !block || bits !== 4 || gIdx || !bBytes || !sBytes || s!.dataType !== ONNX.dtype.FLOAT) continue;
    if (zpName && (!zpBytes || zp!.dataType !== ONNX.dtype.UINT8)) continue;
    const scales = new Float32Array(new Uint8Array(sBytes).buffer); // aligned copy
    const w = `${bName}_wasm8`;
    const { q, scales: col } = int8FromNBits(bBytes, scales, zpBytes, K, N, block);
    newInits.push(
      tensor(`${w}_quantized`, [K, N], ONNX.dtype.INT8, new Uint8Array(q.buffer)),
      tensor(`${w}_scale`, [N], ONNX.dtype.FLOAT, f32bytes(col)),
      tensor(`${w}_zero_point`, [], ONNX.dtype.INT8, new Uint8Array([0])),
    );
    const p = `svc_wasm8_${n.index}`;
    const out = bias ? `${p}_nobias` : n.outputs[0]!;
    const nodesOut = int8MatMulNodes(p, a!, w, out);
    if (bias) nodesOut.push(addNode(`${p}_bias`, out, bias, n.outputs[0]!));
    replace.set(n.index, nodesOut);
    for (const x of [bName, sName, zpName]) if (x) replacedInputs.add(x);
  }
  if (!replace.size) return undefined;
  // weights the remaining nodes still read stay
  for (const n of nodes) if (!replace.has(n.index)) { for (const i of n.inputs) replacedInputs.delete(i); }
  const nameAt = new Map([...inits.values()].map((t) => [t.index, t.name]));
  const g = new WireWriter();
  graph.forEach((f, index) => {
    if (f.no === ONNX.graph.node && replace.has(index)) {
      for (const r of replace.get(index)!) g.message(ONNX.graph.node, r);
    } else if (f.no !== ONNX.graph.initializer || !replacedInputs.has(nameAt.get(index)!)) g.field(f);
  });
  for (const t of newInits) g.message(ONNX.graph.initializer, t);
  return { bytes: withGraph(fields, g).finish(), converted: replace.size };
}

function addNode(name: string, x: string, bias: string, output: string): WireWriter {
  const w = new WireWriter();
  for (const i of [x, bias]) w.string(ONNX.node.input, i);
  return w.string(ONNX.node.output, output).string(ONNX.node.name, name).string(ONNX.node.opType, 'Add');
}
