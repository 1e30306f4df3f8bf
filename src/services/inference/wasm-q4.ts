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
  decodeFields,
  editedGraph,
  first,
  type GraphNode,
  indexGraph,
  intAttr,
  modelGraph,
  ONNX,
  type Tensor,
  tensor,
  type WireField,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';

/** The operator's name as a serialized model holds it. */
const MATMUL_NBITS = new TextEncoder().encode('MatMulNBits');
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
 * The model with every convertible 4-bit MatMulNBits turned into an int8 MatMulInteger, in subgraphs too
 * (merged decoders keep their layers in the branches of an `If`); undefined when there is none (the bytes
 * are used as they are). A node with a group index, non-fp32 scales or data stored outside the file stays
 * as it is. Each weight is converted once, however many nodes read it (both branches of a merged decoder
 * read the same ones); the int8 copy is written beside the 4-bit one, which goes once nothing reads it.
 */
export function nbitsToInt8(model: Uint8Array): { bytes: Uint8Array; converted: number } | undefined {
  if (!hasMatMulNBits(model)) return undefined;
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const plan: Plan = { replace: new Map(), made: new Map(), added: new Map(), read: new Set(), replaced: new Set() };
  const top = planGraph(parsed.graph, new Map(), plan, '');
  if (!plan.replace.size) return undefined;
  return { bytes: withGraph(parsed.fields, writeGraph(top, plan, '')).finish(), converted: plan.replace.size };
}

/** What the conversion does, by node path (graph path and the node's index in its graph). */
interface Plan {
  replace: Map<string, WireWriter[]>;
  /** The int8 weight made from each 4-bit weight (its B, scales and zero points), by their names. */
  made: Map<string, string>;
  /** New initializers by the path of the graph they go into (the one that holds the 4-bit weight). */
  added: Map<string, WireWriter[]>;
  /** Names that nodes left as they are read, in every graph. */
  read: Set<string>;
  /** Initializers that converted nodes read, by name. */
  replaced: Set<string>;
}

/** A graph's fields with, per node index, the subgraphs its attributes hold (decoded once, for both passes). */
interface GraphTree {
  fields: WireField[];
  subs: Map<number, Map<number, GraphTree[]>>;
}

type Scope = Map<string, { t: Tensor; home: string }>;

function planGraph(graph: WireField[], outer: Scope, plan: Plan, path: string): GraphTree {
  const { inits, nodes } = indexGraph(graph);
  const scope: Scope = new Map(outer);
  for (const [name, t] of inits) scope.set(name, { t, home: path });
  const tree: GraphTree = { fields: graph, subs: new Map() };
  for (const n of nodes) {
    const key = `${path}/${n.index}`;
    const r = n.opType === 'MatMulNBits' && n.domain === 'com.microsoft' ? convertNode(n, scope, plan, key) : undefined;
    if (r) {
      plan.replace.set(key, r);
      continue;
    }
    for (const i of n.inputs) plan.read.add(i);
    n.fields.forEach((f, a) => {
      if (f.no !== ONNX.node.attribute) return;
      const graphs = decodeFields(f.bytes!).filter((x) => x.no === ONNX.attr.g || x.no === ONNX.attr.graphs);
      if (!graphs.length) return;
      const at = tree.subs.get(n.index) ?? new Map<number, GraphTree[]>();
      at.set(a, graphs.map((x, k) => planGraph(decodeFields(x.bytes!), scope, plan, `${key}.${a}.${k}`)));
      tree.subs.set(n.index, at);
    });
  }
  return tree;
}

/** The int8 nodes that replace a 4-bit MatMulNBits, or undefined when it stays. */
function convertNode(n: GraphNode, scope: Scope, plan: Plan, key: string): WireWriter[] | undefined {
  const [a, bName, sName, zpName = '', gIdx = '', bias = ''] = n.inputs;
  const K = intAttr(n, 'K'), N = intAttr(n, 'N'), bits = intAttr(n, 'bits') ?? 4, block = intAttr(n, 'block_size');
  const b = scope.get(bName!), s = scope.get(sName!), zp = zpName ? scope.get(zpName) : undefined;
  const bBytes = raw(b?.t), sBytes = raw(s?.t), zpBytes = raw(zp?.t);
  if (!K || !N || !block || bits !== 4 || gIdx || !bBytes || !sBytes || s!.t.dataType !== ONNX.dtype.FLOAT) return undefined;
  if (zpName && (!zpBytes || zp!.t.dataType !== ONNX.dtype.UINT8)) return undefined;
  const source = `${bName}|${sName}|${zpName}`;
  let w = plan.made.get(source);
  if (!w) {
    w = `${bName}_wasm8`;
    plan.made.set(source, w);
    const scales = new Float32Array(new Uint8Array(sBytes).buffer); // aligned copy
    const { q, scales: col } = int8FromNBits(bBytes, scales, zpBytes, K, N, block);
    const home = plan.added.get(b!.home) ?? [];
    home.push(
      tensor(`${w}_quantized`, [K, N], ONNX.dtype.INT8, new Uint8Array(q.buffer)),
      tensor(`${w}_scale`, [N], ONNX.dtype.FLOAT, f32bytes(col)),
      tensor(`${w}_zero_point`, [], ONNX.dtype.INT8, new Uint8Array([0])),
    );
    plan.added.set(b!.home, home);
  }
  for (const x of [bName, sName, zpName]) if (x) plan.replaced.add(x);
  const p = `svc_wasm8_${key.replace(/[^0-9a-z]/gi, '_')}`;
  const out = bias ? `${p}_nobias` : n.outputs[0]!;
  const nodes = int8MatMulNodes(p, a!, w, out);
  if (bias) nodes.push(addNode(`${p}_bias`, out, bias, n.outputs[0]!));
  return nodes;
}

/** The graph written with the plan's replacements, its 4-bit weights that nothing reads left out. */
function writeGraph(tree: GraphTree, plan: Plan, path: string): WireWriter {
  const nodes = new Map<number, WireWriter | WireWriter[]>();
  tree.fields.forEach((f, index) => {
    const replaced = plan.replace.get(`${path}/${index}`);
    if (replaced) nodes.set(index, replaced);
    else if (tree.subs.has(index)) nodes.set(index, withSubgraphs(f, tree.subs.get(index)!, plan, `${path}/${index}`));
  });
  const drop = new Set([...plan.replaced].filter((name) => !plan.read.has(name)));
  return editedGraph(tree.fields, { nodes, drop, added: plan.added.get(path) });
}

/** A node with the subgraphs its attributes hold written again. */
function withSubgraphs(node: WireField, at: Map<number, GraphTree[]>, plan: Plan, key: string): WireWriter {
  const w = new WireWriter();
  decodeFields(node.bytes!).forEach((nf, a) => {
    if (!at.has(a)) return void w.field(nf);
    const attr = new WireWriter();
    let k = 0;
    for (const x of decodeFields(nf.bytes!)) {
      if (x.no === ONNX.attr.g || x.no === ONNX.attr.graphs) attr.message(x.no, writeGraph(at.get(a)![k]!, plan, `${key}.${a}.${k++}`));
      else attr.field(x);
    }
    w.message(ONNX.node.attribute, attr);
  });
  return w;
}

function addNode(name: string, x: string, bias: string, output: string): WireWriter {
  const w = new WireWriter();
  for (const i of [x, bias]) w.string(ONNX.node.input, i);
  return w.string(ONNX.node.output, output).string(ONNX.node.name, name).string(ONNX.node.opType, 'Add');
}
