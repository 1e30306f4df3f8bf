/**
 * A decoder graph cut around its weight products (4-bit, or dynamic 8-bit as q8 files hold them), so that svc's
 * own kernels (src/runtime/kernels.ts) run them and ONNX Runtime the rest (./split-session.ts runs the pieces
 * in turn).
 *
 * ONNX Runtime has no way to hand a node to code of ours from JavaScript (no custom operators in
 * onnxruntime-node), so the graph becomes a chain of smaller graphs. Each layer's MLP, y = down(silu(gate(x))
 * · up(x)) with three 4-bit `MatMulNBits` (4 bits, blocks of 32, no zero points, accuracy_level 4, weights
 * in the file), is one kernel call (`mlpQ4`), and so is a 4-bit LM head; the same with three 8-bit products
 * (`mlpQ8`). The wide cut also makes calls of the attention's products (a bias added after one taken in) and of the residual sums and RMSNorms
 * between products, so that each layer's graph stage is its attention alone; where that would add graph
 * stages, the narrow cut (MLPs and head) is used. A node goes into the latest graph stage its readers allow
 * (and after every kernel call it depends on). Splitting at every 4-bit product with the sums and norms left
 * in the graph made four stages a layer, whose runs cost more than the kernels saved (docs/models.md).
 *
 * Each graph stage declares as inputs the values it reads from earlier stages (and the graph's inputs), and
 * as outputs the values later stages or the caller read. Their element types come from the graph where it
 * declares them, else from the operator (most keep their first input's type). A wrong guess only makes
 * ONNX Runtime refuse a stage, and then the graph is loaded as it is. Nodes that read only weights and
 * constants are written into every stage that reads them.
 */
import {
  all,
  decodeFields,
  elemTypeOf,
  first,
  type GraphNode,
  hasSubgraph,
  indexGraph,
  intAttr,
  intsAttr,
  modelGraph,
  ONNX,
  str,
  type Tensor,
  tensorTypeOf,
  tensorValueInfo,
  type WireField,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';

/** One weight product: `output` = `input` [..., k] × a weight of 4 or 8 bits. */
export type WeightProduct = Q4Product | Q8Product;

/** A 4-bit product: the weight [n, k] in MatMulNBits' layout (./lm-head.ts). */
export interface Q4Product {
  bits: 4;
  input: string;
  output: string;
  k: number;
  n: number;
  b: Uint8Array;
  scales: Float32Array;
}

/**
 * A dynamic 8-bit product, Mul(Cast(MatMulInteger(q, W, zp, w_zp)), Mul(scale, w_scale)) with (q, scale, zp) =
 * DynamicQuantizeLinear(input): `w` [k, n], one scale a column, one zero point.
 */
export interface Q8Product {
  bits: 8;
  input: string;
  output: string;
  k: number;
  n: number;
  w: Int8Array;
  scales: Float32Array;
  zeroPoint: number;
}

/** A layer's MLP: `output` = down(silu(gate(`input`)) · up(`input`)), its three products of one width. */
export interface Mlp {
  input: string;
  output: string;
  gate: WeightProduct;
  up: WeightProduct;
  down: WeightProduct;
}

/** `output` = RMSNorm(`input`) over its last dimension, scaled by `weight` (Llama's, as ONNX Runtime's SimplifiedLayerNormalization). */
export interface RmsNorm {
  input: string;
  output: string;
  weight: Float32Array;
  epsilon: number;
}

/**
 * What one kernel call computes: a product (its bias added, where one follows it), a whole MLP, and between
 * them, with `wide` splits, a layer's residual sums and norms.
 */
export type Kernel =
  | { kind: 'product'; product: WeightProduct; bias?: Float32Array }
  | { kind: 'mlp'; mlp: Mlp }
  | { kind: 'add'; inputs: [string, string]; output: string }
  | { kind: 'rmsNorm'; norm: RmsNorm }
  | { kind: 'lastPositions'; positions: LastPositions };

/**
 * `output` = the last k positions of `input` [b, s, ...] (its axis 1), k the value of `keep` where it is above
 * 0, else s (every one): the graph's `num_logits_to_keep` before its last norm, as exporters write it.
 */
export interface LastPositions {
  input: string;
  keep: string;
  output: string;
}

export type Stage =
  | { kind: 'graph'; model: Uint8Array; inputs: string[]; outputs: string[] }
  | { kind: 'kernels'; calls: Kernel[] };

export interface SplitGraph {
  stages: Stage[];
  inputs: string[];
  outputs: string[];
  /** The graph's inputs and outputs as onnxruntime-node describes a session's (transformers.js reads them). */
  metadata: { inputs: ValueMetadata[]; outputs: ValueMetadata[] };
}

export interface ValueMetadata {
  name: string;
  isTensor: true;
  type: string;
  shape: (number | string)[];
}

const TYPE_NAMES: Record<number, string> = { 1: 'float32', 2: 'uint8', 3: 'int8', 6: 'int32', 7: 'int64', 9: 'bool', 10: 'float16' };

/** A graph input's or output's description from its ValueInfoProto (a dimension: its value or its name). */
function metadataOf(valueInfo: WireField): ValueMetadata {
  const fields = decodeFields(valueInfo.bytes!);
  const tensor = tensorTypeOf(fields) ?? [];
  const shape = first(tensor, ONNX.type.shape)?.bytes;
  const dims = shape ? all(decodeFields(shape), ONNX.type.dim).map((d) => decodeFields(d.bytes!)) : [];
  return {
    name: str(first(fields, ONNX.valueInfo.name)?.bytes),
    isTensor: true,
    type: TYPE_NAMES[elemTypeOf(fields)] ?? 'float32',
    shape: dims.map((d) => {
      const v = first(d, ONNX.type.dimValue);
      return v ? Number(v.int) : str(first(d, DIM_PARAM)?.bytes);
    }),
  };
}

/** TensorShapeProto.Dimension.dim_param */
const DIM_PARAM = 2;

/** The 4-bit product a node is, where the kernel can run it (accuracy_level 4: int8 activations). */
export function q4Product(
  n: GraphNode,
  inits: Map<string, Tensor>,
  weight: (t: Tensor) => Uint8Array | undefined,
): Q4Product | undefined {
  if (n.opType !== 'MatMulNBits' || n.domain !== 'com.microsoft' || n.outputs.length !== 1) return undefined;
  const [input, bName, sName, ...rest] = n.inputs;
  const k = intAttr(n, 'K') ?? 0, cols = intAttr(n, 'N') ?? 0;
  if (rest.some(Boolean) || (intAttr(n, 'bits') ?? 4) !== 4 || intAttr(n, 'block_size') !== 32 || !k || k % 32 || !cols) return undefined;
  // the kernel quantizes activations to int8 as level 4 does; a file asking for float activations keeps them
  if (intAttr(n, 'accuracy_level') !== 4) return undefined;
  const b = inits.get(bName!), s = inits.get(sName!);
  if (b?.dataType !== ONNX.dtype.UINT8 || s?.dataType !== ONNX.dtype.FLOAT) return undefined;
  const bBytes = bytesOf(b, weight), sBytes = bytesOf(s, weight);
  if (bBytes?.length !== cols * (k / 32) * 16 || sBytes?.length !== cols * (k / 32) * 4) return undefined;
  return { bits: 4, input: input!, output: n.outputs[0]!, k, n: cols, b: bBytes, scales: floats(sBytes) };
}

/**
 * The dynamic 8-bit product whose last node is `mul`, the nodes it takes from MatMulInteger on (`nodes`), its
 * DynamicQuantizeLinear (`quantize`, which other products of the same input may read too) and the weights it
 * reads. The kernels take int8 weights: uint8 ones (and their zero point) are moved down by 128, the same
 * products (./int8-weights.ts moves a graph's either way, as ONNX Runtime computes them exactly on the CPU at
 * hand). A product whose weights minus their zero point leave int8 stays where it is.
 */
export function q8Product(
  mul: GraphNode,
  g: Constants,
): { product: Q8Product; nodes: GraphNode[]; quantize: GraphNode; weights: string[] } | undefined {
  if (mul.opType !== 'Mul' || mul.domain || mul.inputs.length !== 2 || mul.outputs.length !== 1) return undefined;
  const [a, b] = mul.inputs.map((x) => g.made.get(x!));
  const [cast, scales] = a?.opType === 'Cast' ? [a, b] : [b, a];
  const mm = g.made.get(cast?.inputs[0] ?? '');
  if (cast?.opType !== 'Cast' || intAttr(cast, 'to') !== ONNX.dtype.FLOAT || scales?.opType !== 'Mul' || mm?.opType !== 'MatMulInteger') {
    return undefined;
  }
  const [q, wName, zp, wzpName] = mm.inputs;
  const dql = g.made.get(q!);
  if (dql?.opType !== 'DynamicQuantizeLinear' || dql.outputs[0] !== q || dql.outputs[2] !== zp) return undefined;
  const wsName = scales.inputs.find((x) => x !== dql.outputs[1]);
  if (!scales.inputs.includes(dql.outputs[1]!) || !wsName) return undefined;
  const w = g.inits.get(wName!), ws = g.inits.get(wsName), wzp = wzpName ? g.inits.get(wzpName) : undefined;
  const type = w?.dataType;
  if ((type !== ONNX.dtype.INT8 && type !== ONNX.dtype.UINT8) || w!.dims.length !== 2 || ws?.dataType !== ONNX.dtype.FLOAT) {
    return undefined;
  }
  const wRaw = bytesOf(w!, g.weight), wsRaw = bytesOf(ws, g.weight), wzpRaw = wzp && bytesOf(wzp, g.weight);
  if (!wRaw || !wsRaw || (wzpName && (wzp?.dataType !== type || wzpRaw?.length !== 1))) return undefined;
  const [k, cols] = w!.dims as [number, number];
  const col = floats(wsRaw);
  if (wRaw.length !== k * cols || (col.length !== cols && col.length !== 1)) return undefined;
  const signed = type === ONNX.dtype.INT8;
  const weights = signed ? new Int8Array(wRaw.buffer, wRaw.byteOffset, wRaw.length) : movedDown(wRaw);
  const zeroPoint = signed ? (wzpRaw ? new Int8Array(wzpRaw.buffer, wzpRaw.byteOffset, 1)[0]! : 0) : (wzpRaw?.[0] ?? 0) - 128;
  if (zeroPoint !== 0 && !fitsInt8(weights, zeroPoint)) return undefined;
  const product: Q8Product = {
    bits: 8,
    input: dql.inputs[0]!,
    output: mul.outputs[0]!,
    k,
    n: cols,
    w: weights,
    scales: col.length === cols ? col : new Float32Array(cols).fill(col[0]!),
    zeroPoint,
  };
  return { product, nodes: [mm, cast, scales, mul], quantize: dql, weights: [wName!, wsName, ...(wzpName ? [wzpName] : [])] };
}

/** uint8 weights as int8 ones 128 lower (a copy): each byte's top bit flipped, four bytes at a time. */
function movedDown(raw: Uint8Array): Int8Array {
  const out = raw.slice();
  const words = new Uint32Array(out.buffer, 0, out.length >> 2);
  for (let i = 0; i < words.length; i++) words[i]! ^= 0x80808080;
  for (let i = words.length * 4; i < out.length; i++) out[i]! ^= 0x80;
  return new Int8Array(out.buffer);
}

/** Whether every w - zeroPoint is an int8, as the kernels hold the weights. */
function fitsInt8(w: Int8Array, zeroPoint: number): boolean {
  let lo = 127, hi = -128;
  for (let i = 0; i < w.length; i++) {
    const v = w[i]!;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo - zeroPoint >= -128 && hi - zeroPoint <= 127;
}

/**
 * The product (4 or 8 bits) ending at `n`, and the nodes it takes in: for 8 bits its DynamicQuantizeLinear too
 * where nothing else reads it (shared ones are taken once all their readers are: `splitGraph`). Every value
 * between its nodes must be read by them alone.
 */
function productAt(
  n: GraphNode,
  g: Constants & { readers: Map<string, number> },
): { product: WeightProduct; nodes: GraphNode[] } | undefined {
  const p4 = q4Product(n, g.inits, g.weight);
  if (p4) return { product: p4, nodes: [n] };
  const p8 = q8Product(n, g);
  if (!p8 || p8.nodes.slice(0, -1).some((x) => g.readers.get(x.outputs[0]!) !== 1)) return undefined;
  const own = p8.quantize.outputs.every((x) => g.readers.get(x) === 1);
  return { product: p8.product, nodes: own ? [p8.quantize, ...p8.nodes] : p8.nodes };
}

/** float32 values of little-endian bytes (copied: the bytes may be unaligned). */
export function floats(raw: Uint8Array): Float32Array {
  const f = new Float32Array(raw.length / 4);
  new Uint8Array(f.buffer).set(raw);
  return f;
}

/**
 * The MLP whose down product ends at `n`: down(Mul(Mul(g, Sigmoid(g)), u)) (either order of each Mul) with g
 * and u products of the same input, the three of one width, every value between read by these nodes only.
 */
function mlpAt(n: GraphNode, g: Constants & { readers: Map<string, number> }): { mlp: Mlp; nodes: GraphNode[] } | undefined {
  const { made, readers } = g;
  const down = productAt(n, g);
  const mul = down && made.get(down.product.input);
  if (!down || mul?.opType !== 'Mul' || mul.domain) return undefined;
  for (const [siluName, uName] of [[mul.inputs[0], mul.inputs[1]], [mul.inputs[1], mul.inputs[0]]]) {
    const silu = made.get(siluName ?? ''), upNode = made.get(uName ?? '');
    if (silu?.opType !== 'Mul' || silu.domain || !upNode) continue;
    const [p, q] = silu.inputs;
    const sig = [made.get(p ?? ''), made.get(q ?? '')].find((x) => x?.opType === 'Sigmoid' && !x.domain);
    const gName = sig?.inputs[0];
    if (!sig || !gName || !silu.inputs.includes(gName) || !silu.inputs.includes(sig.outputs[0]!)) continue;
    const gateNode = made.get(gName);
    const gate = gateNode && productAt(gateNode, g), up = productAt(upNode, g);
    if (!gate || !up || gate.product.input !== up.product.input) continue;
    const inner = [gName, sig.outputs[0]!, silu.outputs[0]!, up.product.output, mul.outputs[0]!];
    const reads = [2, 1, 1, 1, 1]; // g: Sigmoid and the Mul
    if (inner.some((x, i) => readers.get(x) !== reads[i])) continue;
    const [a, b, c] = [gate.product, up.product, down.product];
    if (a.bits !== b.bits || a.bits !== c.bits || a.n !== b.n || a.k !== b.k || c.k !== a.n || c.n !== a.k) continue;
    return {
      mlp: { input: a.input, output: c.output, gate: a, up: b, down: c },
      nodes: [...gate.nodes, ...up.nodes, sig, silu, mul, ...down.nodes],
    };
  }
  return undefined;
}

interface Graphs {
  made: Map<string, GraphNode>;
  readers: Map<string, number>;
  inits: Map<string, Tensor>;
  weight: (t: Tensor) => Uint8Array | undefined;
  byCall: Set<string>;
  absorbed: Set<GraphNode>;
  /** Plain two-input Adds, by each value they read. */
  adds: Map<string, GraphNode>;
}

interface Call {
  kernel: Kernel;
  reads: string[];
  outputs: string[];
}

/**
 * The kernel call node `n` ends, for a wide split: a 4-bit product (with the bias Add that alone reads it), a
 * sum of two values at least one of which a call makes (a residual), or an RMSNorm of a value a call makes.
 * The call stands where its last node was (`at`); `nodes` are all it takes in.
 */
function layerPiece(n: GraphNode, g: Graphs): { at: GraphNode; call: Call; nodes: GraphNode[] } | undefined {
  const found = productAt(n, g);
  if (found) {
    const { product } = found;
    // a bias the product's output alone goes to is added in the same call
    const add = g.readers.get(product.output) === 1 ? biasAdd(product, g) : undefined;
    const output = add?.node.outputs[0] ?? product.output;
    return {
      at: n,
      call: { kernel: { kind: 'product', product: { ...product, output }, bias: add?.bias }, reads: [product.input], outputs: [output] },
      nodes: add ? [...found.nodes, add.node] : found.nodes,
    };
  }
  if (n.opType === 'Add' && !n.domain && n.inputs.length === 2 && n.outputs.length === 1) {
    const [a, b] = n.inputs as [string, string];
    if (g.inits.has(a) || g.inits.has(b) || (!g.byCall.has(a) && !g.byCall.has(b))) return undefined;
    return {
      at: n,
      call: { kernel: { kind: 'add', inputs: [a, b], output: n.outputs[0]! }, reads: [a, b], outputs: [n.outputs[0]!] },
      nodes: [n],
    };
  }
  const last = lastPositionsAt(n, g);
  if (last && g.byCall.has(last.positions.input)) {
    const { input, keep, output } = last.positions;
    return {
      at: n,
      call: { kernel: { kind: 'lastPositions', positions: last.positions }, reads: [input, keep], outputs: [output] },
      nodes: last.nodes,
    };
  }
  const norm = rmsNormAt(n, g);
  if (norm && g.byCall.has(norm.norm.input)) {
    return {
      at: n,
      call: { kernel: { kind: 'rmsNorm', norm: norm.norm }, reads: [norm.norm.input], outputs: [norm.norm.output] },
      nodes: norm.nodes,
    };
  }
  return undefined;
}

/**
 * The last positions of a value ending at `n` (see LastPositions): Gather(x, Range(Cast(Sub(s, Where(Greater(keep,
 * 0), keep, s))), Cast(s), 1), axis 1) with s = Gather(Shape(x), 1) and `keep` a graph input, every value between
 * read by these nodes alone.
 */
function lastPositionsAt(n: GraphNode, g: Graphs): { positions: LastPositions; nodes: GraphNode[] } | undefined {
  if (n.opType !== 'Gather' || n.domain || intAttr(n, 'axis') !== 1 || n.inputs.length !== 2 || n.outputs.length !== 1) return undefined;
  const [x, indices] = n.inputs as [string, string];
  const one = (name: string | undefined, v: number) => intsOf(name ?? '', g)?.join() === String(v);
  const range = g.made.get(indices);
  const [from, to] = [g.made.get(range?.inputs[0] ?? ''), g.made.get(range?.inputs[1] ?? '')];
  if (range?.opType !== 'Range' || !one(range.inputs[2], 1) || from?.opType !== 'Cast' || to?.opType !== 'Cast') return undefined;
  const s = to.inputs[0]!, sub = g.made.get(from.inputs[0]!);
  const where = g.made.get(sub?.inputs[1] ?? ''), keep = where?.inputs[1] ?? '';
  const greater = g.made.get(where?.inputs[0] ?? ''), pick = g.made.get(s);
  const shape = g.made.get(pick?.inputs[0] ?? '');
  if (
    sub?.opType !== 'Sub' || sub.inputs[0] !== s || where?.opType !== 'Where' || where.inputs[2] !== s ||
    greater?.opType !== 'Greater' || greater.inputs[0] !== keep || !one(greater.inputs[1], 0) || g.made.has(keep) ||
    g.inits.has(keep) || pick?.opType !== 'Gather' || (intAttr(pick, 'axis') ?? 0) !== 0 || !one(pick.inputs[1], 1) ||
    shape?.opType !== 'Shape' || shape.inputs[0] !== x || intAttr(shape, 'start') !== undefined || intAttr(shape, 'end') !== undefined
  ) return undefined;
  const nodes = [shape, pick, greater, where, sub, from, to, range, n];
  const reads = new Map<string, number>();
  for (const m of nodes) for (const v of m.inputs) reads.set(v, (reads.get(v) ?? 0) + 1);
  if (nodes.some((m) => m !== n && m.outputs.some((o) => reads.get(o) !== g.readers.get(o)))) return undefined;
  return { positions: { input: x, keep, output: n.outputs[0]! }, nodes };
}

/** The Add that adds a bias (a float vector of the product's width) to a product's output, where one does. */
function biasAdd(p: WeightProduct, g: Graphs): { node: GraphNode; bias: Float32Array } | undefined {
  const add = g.adds.get(p.output);
  const other = add?.inputs.find((x) => x !== p.output);
  const t = other ? g.inits.get(other) : undefined;
  if (!add || add.outputs.length !== 1 || t?.dataType !== ONNX.dtype.FLOAT || t.dims.length !== 1 || t.dims[0] !== p.n) return undefined;
  const raw = bytesOf(t, g.weight);
  return raw && { node: add, bias: floats(raw) };
}

/**
 * An RMSNorm ending at `n`: ONNX Runtime's SimplifiedLayerNormalization over the last axis, or the form exporters
 * write, Mul(w, Mul(x, Div(1, Sqrt(Add(ReduceMean(Pow(x, 2)), eps))))) (either order of each Mul), every value
 * between read by these nodes only.
 */
function rmsNormAt(n: GraphNode, g: Graphs): { norm: RmsNorm; nodes: GraphNode[] } | undefined {
  const vector = (name: string | undefined) => {
    // exporters write a weight equal to another as an Identity of it
    while (name && !g.inits.has(name) && g.made.get(name)?.opType === 'Identity') name = g.made.get(name)!.inputs[0];
    const t = name ? g.inits.get(name) : undefined;
    // widths a multiple of 8: the kernels add the squares in 8 lanes, as ONNX Runtime does (src/runtime/kernels.ts)
    const raw = t?.dataType === ONNX.dtype.FLOAT && t.dims.length === 1 && t.dims[0]! % 8 === 0 ? bytesOf(t, g.weight) : undefined;
    return raw && floats(raw);
  };
  if (n.opType === 'SimplifiedLayerNormalization' && n.inputs.length === 2 && (intAttr(n, 'axis') ?? -1) === -1) {
    const weight = vector(n.inputs[1]);
    const epsilon = floatAttr(n, 'epsilon') ?? 1e-5;
    return weight && n.outputs.length === 1
      ? { norm: { input: n.inputs[0]!, output: n.outputs[0]!, weight, epsilon }, nodes: [n] }
      : undefined;
  }
  if (n.opType !== 'Mul' || n.domain || n.inputs.length !== 2) return undefined;
  const wName = n.inputs.find((x) => vector(x));
  const inner = g.made.get(n.inputs.find((x) => x !== wName) ?? '');
  if (!wName || inner?.opType !== 'Mul' || inner.domain) return undefined;
  for (const [x, dName] of [[inner.inputs[0], inner.inputs[1]], [inner.inputs[1], inner.inputs[0]]]) {
    const div = g.made.get(dName ?? '');
    const sqrt = g.made.get(div?.inputs[1] ?? '');
    const add = g.made.get(sqrt?.inputs[0] ?? '');
    if (div?.opType !== 'Div' || scalarOf(div.inputs[0], g) !== 1 || sqrt?.opType !== 'Sqrt' || add?.opType !== 'Add') continue;
    const [m, e] = g.made.get(add.inputs[0] ?? '')?.opType === 'ReduceMean' ? add.inputs : [add.inputs[1], add.inputs[0]];
    const mean = g.made.get(m ?? ''), epsilon = scalarOf(e, g);
    const pow = g.made.get(mean?.inputs[0] ?? '');
    if (mean?.opType !== 'ReduceMean' || epsilon === undefined || pow?.opType !== 'Pow' || pow.inputs[0] !== x) continue;
    if (scalarOf(pow.inputs[1], g) !== 2 || (intAttr(mean, 'keepdims') ?? 1) !== 1 || !lastAxis(mean, g)) continue;
    const between = [pow, mean, add, sqrt, div, inner];
    // each value inside read only by the next node (the Pow's x and the Mul's x are the norm's input)
    if (between.some((b) => g.readers.get(b.outputs[0]!) !== 1)) continue;
    const weight = vector(wName)!;
    return { norm: { input: x!, output: n.outputs[0]!, weight, epsilon }, nodes: [...between, n] };
  }
  return undefined;
}

/** Whether a ReduceMean reduces its input's last axis alone (axes as an attribute or, from opset 18, an input). */
function lastAxis(mean: GraphNode, g: Graphs): boolean {
  const axes = intsAttr(mean, 'axes') ?? (mean.inputs[1] ? intsOf(mean.inputs[1], g) : undefined);
  return axes?.length === 1 && axes[0] === -1;
}

/** Where constants are found: initializers and Constant nodes (by the value they make). */
export type Constants = Pick<Graphs, 'made' | 'inits' | 'weight'>;

/** The tensor a Constant node makes, or an initializer. */
function constantTensor(name: string | undefined, g: Constants): { t: WireField[]; raw: Uint8Array | undefined } | undefined {
  if (!name) return undefined;
  const init = g.inits.get(name);
  if (init) return { t: init.fields, raw: bytesOf(init, g.weight) };
  const c = g.made.get(name);
  if (c?.opType !== 'Constant') return undefined;
  for (const a of all(c.fields, ONNX.node.attribute)) {
    const af = decodeFields(a.bytes!);
    const t = first(af, ONNX.attr.t)?.bytes;
    if (str(first(af, ONNX.attr.name)?.bytes) === 'value' && t) {
      const fields = decodeFields(t);
      return { t: fields, raw: first(fields, ONNX.tensor.rawData)?.bytes };
    }
  }
  return undefined;
}

/** A float constant with one element (raw or float_data), as a number. */
export function scalarOf(name: string | undefined, g: Constants): number | undefined {
  const c = constantTensor(name, g);
  if (!c || Number(first(c.t, ONNX.tensor.dataType)?.int) !== ONNX.dtype.FLOAT) return undefined;
  const bytes = c.raw ?? first(c.t, ONNX.tensor.floatData)?.bytes;
  return bytes?.length === 4 ? floats(bytes)[0] : undefined;
}

/** An int64 constant's values (raw data). */
export function intsOf(name: string, g: Constants): number[] | undefined {
  const c = constantTensor(name, g);
  if (!c?.raw || Number(first(c.t, ONNX.tensor.dataType)?.int) !== ONNX.dtype.INT64) return undefined;
  const v = new BigInt64Array(c.raw.length / 8);
  new Uint8Array(v.buffer).set(c.raw);
  return [...v].map(Number);
}

/** A node's FLOAT attribute. */
export function floatAttr(n: GraphNode, name: string): number | undefined {
  for (const a of all(n.fields, ONNX.node.attribute)) {
    const af = decodeFields(a.bytes!);
    const f = first(af, ONNX.attr.f)?.bytes;
    if (str(first(af, ONNX.attr.name)?.bytes) === name && f) return floats(f)[0];
  }
  return undefined;
}

function bytesOf(t: Tensor, weight: (t: Tensor) => Uint8Array | undefined): Uint8Array | undefined {
  return first(t.fields, ONNX.tensor.rawData)?.bytes ?? weight(t);
}

const nameOf = (f: WireField, no: number) => str(first(decodeFields(f.bytes!), no)?.bytes);

/**
 * The graph cut at its 4-bit MLPs and head, or wider where that leaves no more graph stages: every 4-bit product
 * (a bias added after it taken in), and the residual sums and norms between them, so that each layer's graph
 * stage holds its attention alone. Undefined when the graph has no 4-bit MLP the kernel can run.
 */
export function splitAtWeights(model: Uint8Array, read: (t: Tensor) => Uint8Array | undefined = () => undefined): SplitGraph | undefined {
  // each weight read from the file once: both cuts, and every pattern tried at a node, ask for the same ones (a
  // q8 0.5B model's 473 MiB of weights were read as 1,651 MiB, all held until collected)
  const seen = new Map<string, Uint8Array | undefined>();
  const weight = (t: Tensor) => seen.has(t.name) ? seen.get(t.name) : seen.set(t.name, read(t)).get(t.name);
  const wide = splitGraph(model, weight, true);
  const graphs = (x: SplitGraph) => x.stages.filter((s) => s.kind === 'graph').length;
  const mlps = (x: SplitGraph) =>
    x.stages.reduce((n, s) => n + (s.kind === 'kernels' ? s.calls.filter((c) => c.kind === 'mlp').length : 0), 0);
  // a graph stage a layer, and the embedding's and the last norm's: as few as can be, no need to cut again
  if (!wide || graphs(wide) <= mlps(wide) + 2) return wide;
  const narrow = splitGraph(model, weight, false);
  // one more is the embedding's stage, whose output the first layer's norm and products read as calls
  return narrow && graphs(wide) > graphs(narrow) + 1 ? narrow : wide;
}

export function splitGraph(model: Uint8Array, weight: (t: Tensor) => Uint8Array | undefined, wide: boolean): SplitGraph | undefined {
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const g = parsed.graph;
  const { inits, nodes } = indexGraph(g);
  // the kernel calls, each standing in for the nodes it absorbs (the call is made where its last node was)
  const calls = new Map<GraphNode, Call>();
  const absorbed = new Set<GraphNode>();
  const made = new Map(nodes.flatMap((n) => n.outputs.map((o) => [o, n] as const)));
  const readers = new Map<string, number>();
  for (const n of nodes) for (const x of n.inputs) readers.set(x, (readers.get(x) ?? 0) + 1);
  for (const n of nodes) {
    const mlp = mlpAt(n, { made, readers, inits, weight });
    if (mlp) {
      calls.set(n, { kernel: { kind: 'mlp', mlp: mlp.mlp }, reads: [mlp.mlp.input], outputs: [mlp.mlp.output] });
      for (const x of mlp.nodes) if (x !== n) absorbed.add(x);
    }
  }
  if (![...calls.values()].some((c) => c.kernel.kind === 'mlp')) return undefined;
  // the head: the narrow cut takes it here, the wide one with every other product below (its weights read once)
  const head = made.get('logits');
  const headProduct = !wide && head && !calls.has(head) && !absorbed.has(head)
    ? productAt(head, { made, readers, inits, weight })
    : undefined;
  if (headProduct) {
    const { product } = headProduct;
    calls.set(head!, { kernel: { kind: 'product', product }, reads: [product.input], outputs: [product.output] });
    for (const x of headProduct.nodes) if (x !== head) absorbed.add(x);
  }
  if (wide) {
    // what calls make; a sum or a norm becomes a call only where it reads one, so that nothing inside an
    // attention (its masks, a per-head norm) leaves its graph stage
    const byCall = new Set([...calls.values()].flatMap((c) => c.outputs));
    const adds = new Map<string, GraphNode>();
    for (const n of nodes) if (n.opType === 'Add' && !n.domain && n.inputs.length === 2) { for (const x of n.inputs) adds.set(x, n); }
    for (const n of nodes) {
      if (calls.has(n) || absorbed.has(n)) continue;
      const piece = layerPiece(n, { made, readers, inits, weight, byCall, absorbed, adds });
      if (!piece) continue;
      calls.set(piece.at, piece.call);
      for (const x of piece.nodes) if (x !== piece.at) absorbed.add(x);
      for (const o of piece.call.outputs) byCall.add(o);
    }
  }
  // a DynamicQuantizeLinear that several 8-bit products read goes once they all have
  const taken = new Set([...absorbed, ...calls.keys()]);
  const readBy = new Map<string, GraphNode[]>();
  for (const n of nodes) for (const x of n.inputs) readBy.get(x)?.push(n) ?? readBy.set(x, [n]);
  for (const n of nodes) {
    if (n.opType !== 'DynamicQuantizeLinear' || taken.has(n)) continue;
    const by = n.outputs.flatMap((o) => readBy.get(o) ?? []);
    if (by.length && by.every((x) => taken.has(x))) absorbed.add(n);
  }
  const declared = new Map<string, WireField>(); // ValueInfo of graph inputs, outputs and value_info, by name
  const inputs: string[] = [], outputs: string[] = [];
  for (const f of g) {
    if (f.no !== ONNX.graph.input && f.no !== ONNX.graph.output && f.no !== VALUE_INFO) continue;
    const name = nameOf(f, ONNX.valueInfo.name);
    if (f.no === ONNX.graph.input && !inits.has(name)) inputs.push(name);
    if (f.no === ONNX.graph.output) outputs.push(name);
    if (!declared.has(name) || f.no !== VALUE_INFO) declared.set(name, f);
  }

  // what each node reads: its inputs and the outer values its subgraphs use (a kernel call: its input)
  const reads = new Map(nodes.map((n) => [n, calls.get(n)?.reads ?? [...new Set([...n.inputs, ...outerNames(n)].filter(Boolean))]]));
  const isCall = (n: GraphNode) => calls.has(n);
  // nodes that read only weights and constants are written into every stage that reads them (ONNX Runtime
  // folds them when it loads the stage), not handed from stage to stage
  const constant = new Map<string, GraphNode>();
  for (const n of nodes) {
    if (!isCall(n) && !absorbed.has(n) && reads.get(n)!.every((x) => inits.has(x) || constant.has(x))) {
      for (const o of n.outputs) constant.set(o, n);
    }
  }
  const staged = nodes.filter((n) => !absorbed.has(n) && !constant.has(n.outputs[0] ?? ''));
  const outputsOf = (n: GraphNode) => calls.get(n)?.outputs ?? n.outputs;
  // the stage each value is ready after: graph stage d, or product stage d (ready for graph stage d + 1)
  const ready = new Map<string, number>(inputs.map((x) => [x, 0]));
  const stageOf = new Map<GraphNode, number>();
  for (const n of staged) {
    const d = Math.max(0, ...reads.get(n)!.map((x) => ready.get(x) ?? 0));
    stageOf.set(n, d);
    for (const o of outputsOf(n)) ready.set(o, isCall(n) ? d + 1 : d);
  }
  // then each node as late as its readers allow: what is made from the graph's inputs alone (a layer's past keys
  // transposed) goes into the stage that reads it, instead of the first stage handing it on through the caller
  // (after 2,000 positions that moved every layer's keys through JavaScript at every step)
  const readersOf = new Map<string, GraphNode[]>();
  for (const n of staged) {
    for (const x of reads.get(n)!) readersOf.get(x)?.push(n) ?? readersOf.set(x, [n]);
  }
  // What several stages read and the graph's inputs alone make (the mask, the rotary rows, the past/new split
  // every layer shares) stays in the first stage, made before any layer: left in the first layer's stage, it kept
  // that stage from being an attention alone (./split-session.ts runs those on the kernel).
  const graphOutputs = new Set(outputs);
  for (const n of [...staged].reverse()) {
    const by = n.outputs.flatMap((o) => readersOf.get(o) ?? []);
    if (isCall(n) || !by.length || n.outputs.some((o) => graphOutputs.has(o))) continue;
    const at = by.map((r) => stageOf.get(r)!);
    if (stageOf.get(n) === 0 && Math.min(...at) !== Math.max(...at)) continue;
    stageOf.set(n, Math.max(stageOf.get(n)!, Math.min(...at)));
  }
  // a conditional that only hands out graph outputs (the present switch's concatenations of every layer's cache)
  // goes into a stage of its own at the end, which a run that fetches none of them skips (./split-session.ts),
  // so that the last layer's stage is its attention alone
  const end = Math.max(...stageOf.values()) + 1;
  for (const n of staged) if (!isCall(n) && hasSubgraph(n) && n.outputs.every((o) => graphOutputs.has(o))) stageOf.set(n, end);
  const last = Math.max(...stageOf.values());
  const types = elemTypes(nodes, inits, declared);

  // the values read outside the stage that makes them (graph outputs count as read by the caller)
  const madeIn = new Map<string, GraphNode>();
  for (const n of staged) for (const o of outputsOf(n)) if (o) madeIn.set(o, n);
  const crossing = new Set(outputs);
  for (const n of staged) {
    for (const x of reads.get(n)!) {
      const by = madeIn.get(x);
      if (by && (isCall(by) || isCall(n) || stageOf.get(by) !== stageOf.get(n))) crossing.add(x);
    }
  }
  /** The constant nodes `members` read, and theirs, in graph order. */
  const constantsFor = (members: GraphNode[]): GraphNode[] => {
    const need = new Set<GraphNode>();
    const visit = (x: string) => {
      const c = constant.get(x);
      if (!c || need.has(c)) return;
      need.add(c);
      reads.get(c)!.forEach(visit);
    };
    members.forEach((n) => reads.get(n)!.forEach(visit));
    return nodes.filter((n) => need.has(n));
  };

  const stages: Stage[] = [];
  for (let d = 0; d <= last; d++) {
    const own = staged.filter((n) => stageOf.get(n) === d && !isCall(n));
    if (own.length) {
      const members = [...constantsFor(own), ...own].sort((a, b) => a.index - b.index);
      const made = new Set(members.flatMap((n) => n.outputs));
      const needed = [...new Set(members.flatMap((n) => reads.get(n)!))];
      const ins = needed.filter((x) => !made.has(x) && !inits.has(x));
      const outs = [...made].filter((x) => x && crossing.has(x));
      const used = new Set(needed.filter((x) => inits.has(x)));
      if (outs.length) {
        const valueInfo = (x: string) => declared.get(x)?.bytes ?? tensorValueInfo(x, types.get(x) ?? ONNX.dtype.FLOAT).finish();
        const graph = new WireWriter().string(ONNX.graph.name, `svc_stage_${d}`);
        for (const n of members) graph.bytes(ONNX.graph.node, n.raw);
        for (const f of g) if (f.no === ONNX.graph.initializer && used.has(nameOf(f, ONNX.tensor.name))) graph.field(f);
        for (const x of ins) graph.bytes(ONNX.graph.input, valueInfo(x));
        for (const x of outs) graph.bytes(ONNX.graph.output, valueInfo(x));
        stages.push({ kind: 'graph', model: withGraph(parsed.fields, graph).finish(), inputs: ins, outputs: outs });
      }
    }
    const here = staged.filter((n) => stageOf.get(n) === d && isCall(n)).map((n) => calls.get(n)!.kernel);
    const before = stages.at(-1);
    if (here.length && before?.kind === 'kernels') before.calls.push(...here);
    else if (here.length) stages.push({ kind: 'kernels', calls: here });
  }
  const io = (no: number, names: string[]) =>
    names.map((x) => metadataOf(g.find((f) => f.no === no && nameOf(f, ONNX.valueInfo.name) === x)!));
  return { stages, inputs, outputs, metadata: { inputs: io(ONNX.graph.input, inputs), outputs: io(ONNX.graph.output, outputs) } };
}

/** GraphProto.value_info: types of intermediate values, where the exporter wrote them. */
const VALUE_INFO = 13;

/** Names a node's subgraphs read from the graphs around them. */
function outerNames(n: GraphNode): string[] {
  const out: string[] = [];
  for (const a of all(n.fields, ONNX.node.attribute)) {
    for (const sub of decodeFields(a.bytes!).filter((f) => f.no === ONNX.attr.g || f.no === ONNX.attr.graphs)) {
      const fields = decodeFields(sub.bytes!);
      const { inits, nodes } = indexGraph(fields);
      const inner = new Set([
        ...inits.keys(),
        ...fields.filter((f) => f.no === ONNX.graph.input).map((f) => nameOf(f, ONNX.valueInfo.name)),
        ...nodes.flatMap((x) => x.outputs),
      ]);
      for (const x of nodes.flatMap((x) => [...x.inputs, ...outerNames(x)])) if (x && !inner.has(x)) out.push(x);
    }
  }
  return out;
}

/** Operators whose outputs have a fixed element type. */
const FIXED: Record<string, number> = {
  Shape: ONNX.dtype.INT64,
  Size: ONNX.dtype.INT64,
  ArgMax: ONNX.dtype.INT64,
  ArgMin: ONNX.dtype.INT64,
  NonZero: ONNX.dtype.INT64,
  Equal: ONNX.dtype.BOOL,
  Less: ONNX.dtype.BOOL,
  LessOrEqual: ONNX.dtype.BOOL,
  Greater: ONNX.dtype.BOOL,
  GreaterOrEqual: ONNX.dtype.BOOL,
  Not: ONNX.dtype.BOOL,
  And: ONNX.dtype.BOOL,
  Or: ONNX.dtype.BOOL,
  Xor: ONNX.dtype.BOOL,
  IsNaN: ONNX.dtype.BOOL,
  IsInf: ONNX.dtype.BOOL,
  MatMulNBits: ONNX.dtype.FLOAT,
  MatMulIntegerToFloat: ONNX.dtype.FLOAT,
  DynamicQuantizeMatMul: ONNX.dtype.FLOAT,
  DequantizeLinear: ONNX.dtype.FLOAT,
  MatMulInteger: ONNX.dtype.INT32,
};

/** Element types of the values nodes make (where a stage has to declare them). */
function elemTypes(nodes: GraphNode[], inits: Map<string, Tensor>, declared: Map<string, WireField>): Map<string, number> {
  const types = new Map<string, number>();
  for (const [name, t] of inits) types.set(name, t.dataType);
  for (const [name, f] of declared) types.set(name, elemTypeOf(decodeFields(f.bytes!)));
  const of = (x: string | undefined) => (x ? types.get(x) : undefined) ?? ONNX.dtype.FLOAT;
  for (const n of nodes) {
    const t = (i: number): number => {
      if (FIXED[n.opType] !== undefined) return FIXED[n.opType]!;
      switch (n.opType) {
        case 'Cast':
          return intAttr(n, 'to') ?? ONNX.dtype.FLOAT;
        case 'Constant':
        case 'ConstantOfShape':
          return tensorAttrType(n, 'value') ?? ONNX.dtype.FLOAT;
        case 'Where':
          return of(n.inputs[1]);
        case 'DynamicQuantizeLinear':
          return i === 1 ? ONNX.dtype.FLOAT : ONNX.dtype.UINT8;
        case 'QuantizeLinear':
          return n.inputs[2] ? of(n.inputs[2]) : ONNX.dtype.UINT8;
        case 'TopK':
          return i === 1 ? ONNX.dtype.INT64 : of(n.inputs[0]);
        case 'If':
          return ifOutputType(n, i) ?? ONNX.dtype.FLOAT;
        default:
          return of(n.inputs[0]);
      }
    };
    n.outputs.forEach((o, i) => o && !types.has(o) && types.set(o, t(i)));
  }
  return types;
}

/** The data type of a node's TENSOR attribute. */
function tensorAttrType(n: GraphNode, name: string): number | undefined {
  for (const a of all(n.fields, ONNX.node.attribute)) {
    const af = decodeFields(a.bytes!);
    if (str(first(af, ONNX.attr.name)?.bytes) !== name) continue;
    const t = first(af, ONNX.attr.t)?.bytes;
    return t ? Number(first(decodeFields(t), ONNX.tensor.dataType)?.int ?? ONNX.dtype.FLOAT) : undefined;
  }
  return undefined;
}

/** The element type of an If's `i`th output, from its then-branch's declared outputs. */
function ifOutputType(n: GraphNode, i: number): number | undefined {
  for (const a of all(n.fields, ONNX.node.attribute)) {
    const af = decodeFields(a.bytes!);
    const g = first(af, ONNX.attr.g)?.bytes;
    if (!g) continue;
    const outs = decodeFields(g).filter((f) => f.no === ONNX.graph.output);
    return outs[i] ? elemTypeOf(decodeFields(outs[i]!.bytes!)) : undefined;
  }
  return undefined;
}
