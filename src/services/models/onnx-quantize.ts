/**
 * Weight quantization of an fp32 ONNX graph, the way transformers.js' published variants are built
 * (and as scripts/models/quantize.py does for the fixtures):
 *
 *  q8: every MatMul whose weight is a 2-D fp32 initializer becomes DynamicQuantizeLinear + MatMulInteger
 *      (uint8 activations, int8 weights with one scale per output column), onnxruntime's `quantize_dynamic`
 *      shape with `per_channel`; embedding
 *      tables (Gather on a 2-D fp32 initializer, axis 0) become int8 rows + DequantizeLinear.
 *      transformers.js loads it as dtype `q8` (onnx/model_quantized.onnx).
 *  q4: every such MatMul becomes com.microsoft MatMulNBits (4 bits, blocks of 32 along K, one fp32 scale
 *      per block chosen as llama.cpp's Q4_0 chooses it, default zero point 8), the layout of
 *      transformers.js' `q4` (onnx/model_q4.onnx), with
 *      `accuracy_level` 4: ONNX Runtime then quantizes the activations to int8 per block and runs int8
 *      dot-product kernels (VNNI/AVX2 natively, SIMD on WASM). Without it the CPU kernel dequantizes every
 *      weight to fp32 on each call and q4 decodes slower than q8 although it reads fewer bytes.
 *      The LM head is an ordinary MatMul and gets the same treatment: it is the largest matrix a decode
 *      step reads. Embedding tables become int8 rows as in q8: a decode step reads one row of them, so
 *      4 bits would save file size but no time, at a precision cost paid on every token.
 *
 * The rewrite works on the protobuf wire format (onnx-wire.ts): untouched nodes, initializers and every
 * other field are copied byte for byte. Weights stored as external data are read and inlined, so the
 * output is one self-contained file (refused above protobuf's 2 GiB message limit).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { concatBytes } from '../bytes.ts';
import { invalidArgument, ServiceError } from '../errors.ts';
import { isSafeRepoPath } from './files.ts';
import {
  all,
  containsBytes,
  decodeFields,
  externalEntries,
  first,
  type GraphNode,
  hasSubgraph,
  indexGraph,
  intAttr,
  isExternal,
  node,
  ONNX,
  str,
  type Tensor,
  tensor,
  type WireField,
  WireWriter,
  withGraph,
} from './onnx-wire.ts';

export type QuantTarget = 'q8' | 'q4';

/** Accepted spellings of `quantize` (Ollama's `q8_0`, `q4_0`, and transformers.js dtypes). */
const TARGETS: Record<string, QuantTarget> = { q8: 'q8', q8_0: 'q8', quantized: 'q8', q4: 'q4', q4_0: 'q4' };

/** 400 naming the supported targets for anything else (K-quants are GGUF formats, not ONNX). */
export function parseQuantize(q: string): QuantTarget {
  const t = TARGETS[q.trim().toLowerCase()];
  if (!t) {
    throw invalidArgument(`unsupported quantize target '${q}': supported are q8 (q8_0) and q4 (q4_0), applied to fp32 ONNX weights`);
  }
  return t;
}

export interface QuantizeOptions {
  /** Directory of the graph file, for tensors stored as external data. */
  dir: string;
  onProgress?: (done: number, total: number) => void;
}

export interface QuantizeResult {
  bytes: Uint8Array;
  /** Initializers rewritten (MatMul weights and Gather tables). */
  quantized: number;
}

const MAX_PROTO = 2 ** 31 - 1;

type Node = GraphNode;
export type { Tensor };

const unsupported = (m: string) => new ServiceError(400, 'invalid_argument', m);

export async function quantizeOnnx(input: Uint8Array, target: QuantTarget, opts: QuantizeOptions): Promise<QuantizeResult> {
  let model: WireField[];
  try {
    model = decodeFields(input);
  } catch (e) {
    throw unsupported(`the ONNX graph cannot be read: ${(e as Error).message}`);
  }
  const graphField = first(model, ONNX.model.graph);
  if (!graphField?.bytes) throw unsupported('the ONNX file has no graph');
  const graph = decodeFields(graphField.bytes);

  const opsets = all(model, ONNX.model.opsetImport).map((f) => {
    const o = decodeFields(f.bytes!);
    return { domain: str(first(o, ONNX.opset.domain)?.bytes), version: Number(first(o, ONNX.opset.version)?.int ?? 0n) };
  });
  const defaultOpset = opsets.find((o) => o.domain === '' || o.domain === 'ai.onnx')?.version ?? 0;
  if (target === 'q8' && defaultOpset < 11) {
    throw unsupported(`q8 quantization needs ONNX opset 11 or later; the graph has opset ${defaultOpset}`);
  }

  const { inits, nodes } = indexGraph(graph);

  const isFp32Matrix = (t: Tensor | undefined): t is Tensor => !!t && t.dims.length === 2 && t.dataType === ONNX.dtype.FLOAT;
  const matmuls = nodes.filter((n) =>
    n.opType === 'MatMul' && (n.domain === '' || n.domain === 'ai.onnx') && isFp32Matrix(inits.get(n.inputs[1]))
  );
  // DequantizeLinear with an int8 zero point needs opset 10; graphs that old keep fp32 tables under q4
  const gathers = defaultOpset >= 10
    ? nodes.filter((n) =>
      n.opType === 'Gather' && (n.domain === '' || n.domain === 'ai.onnx') && isFp32Matrix(inits.get(n.inputs[0])) &&
      (intAttr(n, 'axis') ?? 0) === 0
    )
    : [];
  const total = matmuls.length + gathers.length;
  if (total === 0) throw unsupported('the graph has no fp32 MatMul weights to quantize (is it quantized already?)');

  const replace = new Map<number, WireWriter[]>();
  const newInits = new Map<string, WireWriter>();
  const dropped = new Set<string>();
  let done = 0;
  const step = async () => {
    opts.onProgress?.(++done, total);
    await new Promise((r) => setImmediate(r)); // keep the server responsive and the progress flowing
  };

  for (const [i, n] of matmuls.entries()) {
    const w = inits.get(n.inputs[1])!;
    const W = floats(w, opts.dir);
    const [K, N] = w.dims;
    const p = `svc_${target}_${i}`;
    if (target === 'q8') {
      if (!newInits.has(`${w.name}_quantized`)) {
        const { q, scales } = int8PerColumn(W, K, N);
        newInits.set(`${w.name}_quantized`, tensor(`${w.name}_quantized`, [K, N], ONNX.dtype.INT8, new Uint8Array(q.buffer)));
        newInits.set(`${w.name}_scale`, tensor(`${w.name}_scale`, [N], ONNX.dtype.FLOAT, f32bytes(scales)));
        newInits.set(`${w.name}_zero_point`, tensor(`${w.name}_zero_point`, [], ONNX.dtype.INT8, new Uint8Array([0])));
      }
      replace.set(n.index, int8MatMulNodes(p, n.inputs[0], w.name, n.outputs[0]));
    } else {
      const block = 32;
      if (!newInits.has(`${w.name}_q4`)) {
        const { packed, scales, blocks } = int4Blocks(W, K, N, block);
        newInits.set(`${w.name}_q4`, tensor(`${w.name}_q4`, [N, blocks, block / 2], ONNX.dtype.UINT8, packed));
        newInits.set(`${w.name}_q4_scales`, tensor(`${w.name}_q4_scales`, [N * blocks], ONNX.dtype.FLOAT, f32bytes(scales)));
      }
      replace.set(n.index, [
        node('MatMulNBits', [n.inputs[0], `${w.name}_q4`, `${w.name}_q4_scales`], [n.outputs[0]], p, 'com.microsoft', {
          K,
          N,
          bits: 4,
          block_size: block,
          accuracy_level: 4,
        }),
      ]);
    }
    dropped.add(w.name);
    await step();
  }

  for (const [i, n] of gathers.entries()) {
    const w = inits.get(n.inputs[0])!;
    const W = floats(w, opts.dir);
    const p = `svc_g8_${i}`;
    if (!newInits.has(`${w.name}_g8`)) {
      for (const [name, t] of int8Table(w.name, w.dims, W)) newInits.set(name, t);
    }
    replace.set(n.index, int8GatherNodes(p, w.name, n.inputs[1]!, n.outputs[0]!));
    dropped.add(w.name);
    await step();
  }

  // A weight also read elsewhere (a tied embedding, a subgraph, a graph output) stays.
  const enc = new TextEncoder();
  const subgraphNodes = nodes.filter((n) => !replace.has(n.index) && hasSubgraph(n));
  const outputs = all(graph, ONNX.graph.output).map((f) => f.bytes!);
  for (const name of [...dropped]) {
    const used = nodes.some((n) => !replace.has(n.index) && n.inputs.includes(name));
    const nameBytes = enc.encode(name);
    const mentioned = [...subgraphNodes.map((n) => n.raw), ...outputs].some((b) => containsBytes(b, nameBytes));
    if (used || mentioned) dropped.delete(name);
  }

  const g = new WireWriter();
  graph.forEach((f, index) => {
    if (f.no === ONNX.graph.node && replace.has(index)) {
      for (const r of replace.get(index)!) g.message(ONNX.graph.node, r);
    } else if (f.no === ONNX.graph.initializer) {
      const t = [...inits.values()].find((x) => x.index === index)!;
      if (dropped.has(t.name)) return;
      if (isExternal(t)) g.message(ONNX.graph.initializer, tensor(t.name, t.dims, t.dataType, readExternal(t, opts.dir), t.fields));
      else g.field(f);
    } else g.field(f);
  });
  for (const t of newInits.values()) g.message(ONNX.graph.initializer, t);

  const m = withGraph(model, g);
  if (target === 'q4' && !opsets.some((o) => o.domain === 'com.microsoft')) {
    m.message(ONNX.model.opsetImport, new WireWriter().string(ONNX.opset.domain, 'com.microsoft').varint(ONNX.opset.version, 1));
  }
  if (m.length > MAX_PROTO) throw unsupported(`the quantized graph would be ${m.length} bytes, above ONNX's 2 GiB single-file limit`);
  return { bytes: m.finish(), quantized: total };
}

/** An embedding table as int8 rows with one scale (initializers `${w}_g8`, `_g8_scale`, `_g8_zp`), by name. */
export function int8Table(w: string, dims: number[], W: Floats): [string, WireWriter][] {
  const { q, scale } = int8PerTensor(W);
  return [
    [`${w}_g8`, tensor(`${w}_g8`, dims, ONNX.dtype.INT8, new Uint8Array(q.buffer))],
    [`${w}_g8_scale`, tensor(`${w}_g8_scale`, [], ONNX.dtype.FLOAT, f32bytes([scale]))],
    [`${w}_g8_zp`, tensor(`${w}_g8_zp`, [], ONNX.dtype.INT8, new Uint8Array([0]))],
  ];
}

/** Rows `indices` of the int8 table `${w}_g8`, dequantized into `output`. */
export function int8GatherNodes(p: string, w: string, indices: string, output: string): WireWriter[] {
  return [
    node('Gather', [`${w}_g8`, indices], [`${p}_q`], p, '', { axis: 0 }),
    node('DequantizeLinear', [`${p}_q`, `${w}_g8_scale`, `${w}_g8_zp`], [output], `${p}_dq`),
  ];
}

/**
 * `input` × int8 weight `${w}_quantized` [K, N] with column scales `${w}_scale` and zero point
 * `${w}_zero_point`: activations quantized to uint8 per call, the integer product scaled back to fp32.
 */
export function int8MatMulNodes(p: string, input: string, w: string, output: string): WireWriter[] {
  return [
    node('DynamicQuantizeLinear', [input], [`${p}_a`, `${p}_as`, `${p}_az`], `${p}_dql`),
    node('MatMulInteger', [`${p}_a`, `${w}_quantized`, `${p}_az`, `${w}_zero_point`], [`${p}_i32`], `${p}_mmi`),
    node('Cast', [`${p}_i32`], [`${p}_f`], `${p}_cast`, '', { to: ONNX.dtype.FLOAT }),
    node('Mul', [`${p}_as`, `${w}_scale`], [`${p}_s`], `${p}_smul`),
    node('Mul', [`${p}_f`, `${p}_s`], [output], `${p}_out`),
  ];
}

function readExternal(t: Tensor, dir: string): Uint8Array {
  const kv = externalEntries(t);
  const location = kv.get('location') ?? '';
  if (!isSafeRepoPath(location)) throw unsupported(`tensor '${t.name}' points at external data outside the model folder ('${location}')`);
  const offset = Number(kv.get('offset') ?? 0);
  const expected = t.dims.reduce((a, b) => a * b, 1) * bytesPerElement(t.dataType);
  const length = Number(kv.get('length') ?? expected);
  const out = new Uint8Array(length);
  let fd: number;
  try {
    fd = openSync(join(dir, location), 'r');
  } catch {
    throw unsupported(`tensor '${t.name}' needs the external data file onnx/${location}, which the model does not have`);
  }
  try {
    let got = 0;
    while (got < length) {
      const n = readSync(fd, out, got, length - got, offset + got);
      if (n === 0) throw unsupported(`external data file onnx/${location} is shorter than tensor '${t.name}' needs`);
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

function bytesPerElement(dataType: number): number {
  return ({ 1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2 } as Record<number, number>)[dataType] ?? 1;
}

export function floats(t: Tensor, dir: string): Float32Array {
  const count = t.dims.reduce((a, b) => a * b, 1);
  let raw = isExternal(t) ? readExternal(t, dir) : first(t.fields, ONNX.tensor.rawData)?.bytes;
  if (!raw) {
    // float_data: packed (one length-delimited field) or one fixed32 field per value
    const parts = all(t.fields, ONNX.tensor.floatData).map((f) => f.bytes!);
    raw = concatBytes(parts);
  }
  if (raw.byteLength !== count * 4) throw unsupported(`weight '${t.name}' holds ${raw.byteLength} bytes, expected ${count * 4}`);
  const copy = new Uint8Array(raw); // aligned copy
  const view = new DataView(copy.buffer);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/**
 * One scale per output column: the integer product sums along K, so a column scale factors out of it
 * (the graph multiplies the [.., N] result by activation scale × column scales). Per-tensor scales let
 * one large column coarsen every other one.
 */
function int8PerColumn(W: Float32Array, K: number, N: number): { q: Int8Array; scales: number[] } {
  const max = new Float64Array(N);
  for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) max[n] = Math.max(max[n]!, Math.abs(W[k * N + n]!));
  const scales = Array.from(max, (m) => Math.fround(Math.max(m, 1e-8) / 127));
  const q = new Int8Array(W.length);
  for (let k = 0; k < K; k++) {
    for (let n = 0; n < N; n++) q[k * N + n] = Math.max(-127, Math.min(127, Math.round(W[k * N + n]! / scales[n]!)));
  }
  return { q, scales };
}

/** Values of a float32 tensor, read in place: a Float32Array, or little-endian bytes at any alignment. */
export type Floats = Float32Array | DataView;

function int8PerTensor(W: Floats): { q: Int8Array; scale: number } {
  const count = W instanceof DataView ? W.byteLength / 4 : W.length;
  const at = W instanceof DataView ? (i: number) => W.getFloat32(i * 4, true) : (i: number) => W[i]!;
  let max = 0;
  for (let i = 0; i < count; i++) max = Math.max(max, Math.abs(at(i)));
  const scale = Math.fround(Math.max(max, 1e-8) / 127);
  const q = new Int8Array(count);
  for (let i = 0; i < count; i++) q[i] = Math.max(-127, Math.min(127, Math.round(at(i) / scale)));
  return { q, scale };
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** x (a float32 value) rounded to the nearest half-precision value, ties to even; ±Infinity past the largest. */
export function toHalf(x: number): number {
  f32[0] = x;
  const exponent = (u32[0]! >>> 23) & 255;
  if (exponent === 255 || x === 0) return x;
  // a half's step: 2^(e - 10) for a value in [2^e, 2^(e+1)); subnormal halves step 2^-24 below 2^-14
  const step = 2 ** (Math.max(exponent - 127, -14) - 10);
  const units = Math.abs(x) / step; // exact: a power of two
  const down = Math.floor(units), rest = units - down;
  const n = rest > 0.5 || (rest === 0.5 && down % 2 === 1) ? down + 1 : down;
  const y = n * step;
  return (x < 0 ? -1 : 1) * (y > 65504 ? Infinity : y);
}

/**
 * W is [K, N] row-major; MatMulNBits wants per output column n, K values in blocks, low nibble first.
 * Each block's scale is chosen as llama.cpp's Q4_0 chooses it: the value of largest magnitude, divided by
 * −8, so that value lands on the code for −8 exactly and the block uses all 16 levels (a scale of
 * max|w| / 7, transformers.js' recipe, leaves one unused). Codes round half up, as Q4_0's do; a value of
 * the other sign at the block's full magnitude is clamped to +7. The codes are taken with the fp32 scale and
 * the scale is stored rounded to half precision, both as Q4_0 does: llama.cpp stores it as a half, and svc's
 * kernels then read 18 bytes a block instead of 20 (src/runtime/kernels.ts).
 */
function int4Blocks(W: Float32Array, K: number, N: number, block: number): { packed: Uint8Array; scales: number[]; blocks: number } {
  const blocks = Math.ceil(K / block);
  const packed = new Uint8Array(N * blocks * (block / 2));
  const scales: number[] = new Array(N * blocks);
  const vals = new Float32Array(block);
  const code = (x: number, inv: number) => Math.min(15, Math.floor(x * inv + 8.5));
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < blocks; b++) {
      let max = 0;
      for (let j = 0; j < block; j++) {
        const k = b * block + j;
        vals[j] = k < K ? W[k * N + n] : 0;
        if (Math.abs(vals[j]) > Math.abs(max)) max = vals[j];
      }
      const scale = Math.fround(max / -8);
      const inv = scale ? Math.fround(1 / scale) : 0;
      scales[n * blocks + b] = toHalf(scale);
      const base = (n * blocks + b) * (block / 2);
      for (let j = 0; j < block; j += 2) packed[base + j / 2] = code(vals[j], inv) | (code(vals[j + 1], inv) << 4);
    }
  }
  return { packed, scales, blocks };
}

export function f32bytes(values: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const v = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) v.setFloat32(i * 4, values[i]!, true);
  return out;
}
