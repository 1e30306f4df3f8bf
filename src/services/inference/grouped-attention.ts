/**
 * Grouped-query attention without repeating the key/value heads. Exports of GQA decoders (Qwen2, Llama 3,
 * Mistral...) copy each KV head once per query head of its group (Unsqueeze → Expand → Reshape) before
 * the two attention MatMuls, so every decode step writes the whole cache again, `heads / kvHeads` times
 * over: at a 2,000-token context that copy was a sixth of a Qwen2.5-0.5B step.
 *
 * The rewrite groups the queries instead. Query heads are numbered group by group (head h reads KV head
 * h / group), so queries [b, heads, q, d] reshape for free to [b, kvHeads, group·q, d]; one MatMul per KV
 * head against the unrepeated keys gives the scores, which reshape back to [b, heads, q, t]. The
 * probabilities do the same against the unrepeated values. Ops between the repeat and the MatMul that act
 * on each head alone (the key's transpose, a scalar scale) move onto the unrepeated tensor; a scalar scale
 * right after the scores stays next to its MatMul, where ONNX Runtime fuses it. The products and sums are
 * the same ones: the logits agree to float rounding (tested against the exported graph and torch).
 *
 * Works on the protobuf wire format (../models/onnx-wire.ts); a graph that does not have this shape is left
 * as it is.
 */
import { containsBytes } from '../models/onnx-quantize.ts';
import {
  all,
  decodeFields,
  first,
  type GraphNode,
  hasSubgraph,
  indexGraph,
  int64s,
  node,
  ONNX,
  str,
  type Tensor,
  type WireField,
  WireWriter,
} from '../models/onnx-wire.ts';

/** Attention head counts from the model's config. */
export interface AttentionHeads {
  heads: number;
  kvHeads: number;
}

/** Whether a config's heads are grouped (fewer KV heads than query heads), and how. */
export function attentionHeads(config: Record<string, unknown>): AttentionHeads | undefined {
  const c = (config.text_config ?? config) as { num_attention_heads?: number; num_key_value_heads?: number };
  const heads = Number(c.num_attention_heads), kvHeads = Number(c.num_key_value_heads);
  return Number.isInteger(heads) && Number.isInteger(kvHeads) && kvHeads > 0 && heads > kvHeads && heads % kvHeads === 0
    ? { heads, kvHeads }
    : undefined;
}

/**
 * The session option that carries a decoder's head counts to where its session is created (the inference
 * thread, ./ort-sessions.ts), which groups its attention; taken out before ONNX Runtime sees the options.
 */
export const ATTENTION_HEADS_OPTION = 'svcAttentionHeads';

/** Session options without ours. */
export function withoutAttentionHeads<T extends Record<string, unknown>>(options: T): T {
  if (!(ATTENTION_HEADS_OPTION in options)) return options;
  const { [ATTENTION_HEADS_OPTION]: _, ...rest } = options;
  return rest as T;
}

const GROUPS = 'svc_gqa_kv_groups';
const HEADS = 'svc_gqa_heads';

/**
 * The model with its repeated KV heads grouped (see the module comment), or undefined when nothing matched.
 * With `externalFile` (the model's own file name, `model` being that file's bytes), initializers stored
 * inline are written as external data pointing into that file instead of being copied: the result is a
 * small graph that ONNX Runtime loads with its weights read from the original file.
 */
export function groupQueryAttention(
  model: Uint8Array,
  h: AttentionHeads,
  externalFile?: string,
): { bytes: Uint8Array; grouped: number } | undefined {
  if (!containsBytes(model, new TextEncoder().encode('Expand'))) return undefined;
  const fields = decodeFields(model);
  const graphField = first(fields, ONNX.model.graph);
  if (!graphField?.bytes) return undefined;
  const graph = decodeFields(graphField.bytes);
  const { inits, nodes } = indexGraph(graph);
  // names used inside a subgraph are not listed as inputs: such a graph is left alone
  if (nodes.some(hasSubgraph) || !decoderWith(graph, h.kvHeads)) return undefined;
  const outputs = new Set(all(graph, ONNX.graph.output).map((f) => str(first(decodeFields(f.bytes!), ONNX.valueInfo.name)?.bytes)));
  const producer = new Map<string, GraphNode>();
  const consumers = new Map<string, GraphNode[]>();
  for (const n of nodes) {
    for (const o of n.outputs) producer.set(o, n);
    for (const i of n.inputs) if (i) consumers.set(i, [...(consumers.get(i) ?? []), n]);
  }
  const constant = constants(inits, nodes);
  /** The one node reading `name`, when nothing else (not even the graph's outputs) does. */
  const onlyUse = (name: string) => {
    const c = consumers.get(name);
    return c?.length === 1 && !outputs.has(name) ? c[0] : undefined;
  };
  const scalarScale = (n: GraphNode, x: string) =>
    (n.opType === 'Mul' || n.opType === 'Div') && !n.domain && n.inputs[0] === x && constant.get(n.inputs[1]!)?.size === 1;

  const replace = new Map<number, WireWriter[]>(); // at the index of the last node of each match
  const removed = new Set<GraphNode>();
  const stillRead = new Set<string>(outputs); // by the graph's outputs and the new nodes
  let grouped = 0;
  for (const e of nodes) {
    if (e.opType !== 'Expand' || e.domain) continue;
    const u = producer.get(e.inputs[0]!);
    if (u?.opType !== 'Unsqueeze' || u.domain || onlyUse(u.outputs[0]!) !== e) continue;
    const axes = u.inputs[1] ? constant.get(u.inputs[1])?.ints : intsAttr(u, 'axes');
    if (axes?.length !== 1 || axes[0] !== 2) continue;
    const r = onlyUse(e.outputs[0]!);
    if (r?.opType !== 'Reshape' || r.domain) continue;
    // head-wise ops up to the MatMul that reads the repeated heads as its right operand
    const between: GraphNode[] = [];
    let at = r.outputs[0]!;
    let mm: GraphNode | undefined;
    for (let n = onlyUse(at); n; n = onlyUse(at)) {
      if (n.opType === 'MatMul' && !n.domain && n.inputs[1] === at && n.inputs[0] !== at) {
        mm = n;
        break;
      }
      const transpose = n.opType === 'Transpose' && !n.domain && `${intsAttr(n, 'perm')}` === '0,1,3,2';
      if (!transpose && !scalarScale(n, at)) break;
      between.push(n);
      at = n.outputs[0]!;
    }
    if (!mm) continue;
    const after = onlyUse(mm.outputs[0]!);
    const scale = after && scalarScale(after, mm.outputs[0]!) ? after : undefined;

    const p = `svc_gqa_${grouped}`;
    const out: WireWriter[] = [];
    let x = u.inputs[0]!;
    between.forEach((n, i) => {
      out.push(renamed(n, [x, ...n.inputs.slice(1)], [`${p}_kv${i}`], `${p}_kv${i}`));
      x = `${p}_kv${i}`;
    });
    out.push(
      node('Reshape', [mm.inputs[0]!, GROUPS], [`${p}_a`], `${p}_a`),
      node('MatMul', [`${p}_a`, x], [`${p}_mm`], `${p}_mm`),
    );
    let y = `${p}_mm`;
    if (scale) {
      out.push(renamed(scale, [y, scale.inputs[1]!], [`${p}_scaled`], `${p}_scaled`));
      y = `${p}_scaled`;
    }
    out.push(node('Reshape', [y, HEADS], [(scale ?? mm).outputs[0]!], `${p}_heads`));
    for (const n of [u, e, r, ...between, mm, ...(scale ? [scale] : [])]) removed.add(n);
    stillRead.add(x).add(mm.inputs[0]!);
    for (const n of [...between, ...(scale ? [scale] : [])]) for (const i of n.inputs.slice(1)) stillRead.add(i);
    replace.set((scale ?? mm).index, out);
    grouped++;
  }
  if (!grouped) return undefined;
  // what only the removed repeats used (their shape arithmetic) goes too
  sweepUnused(nodes, removed, stillRead);

  const gone = new Set([...removed].map((n) => n.index));
  const g = new WireWriter();
  graph.forEach((f, index) => {
    if (f.no === ONNX.graph.node) {
      for (const w of replace.get(index) ?? []) g.message(ONNX.graph.node, w);
      if (!gone.has(index)) g.field(f);
    } else if (f.no === ONNX.graph.initializer && externalFile) {
      g.message(ONNX.graph.initializer, pointInto(model, decodeFields(f.bytes!), externalFile));
    } else g.field(f);
  });
  g.message(ONNX.graph.initializer, int64Tensor(GROUPS, [0, h.kvHeads, -1, 0]));
  g.message(ONNX.graph.initializer, int64Tensor(HEADS, [0, h.heads, -1, 0]));
  const m = new WireWriter();
  for (const f of fields) {
    if (f.no === ONNX.model.graph) m.message(ONNX.model.graph, g);
    else m.field(f);
  }
  return { bytes: m.finish(), grouped };
}

/**
 * Whether the graph is a decoder with a KV cache of `kvHeads` heads (inputs `past_key_values.*` whose
 * second dimension, where fixed, is `kvHeads`): the head counts given are that decoder's, not those of a
 * vision or audio encoder loaded with the same options.
 */
function decoderWith(graph: WireField[], kvHeads: number): boolean {
  let past = 0;
  for (const f of all(graph, ONNX.graph.input)) {
    const v = decodeFields(f.bytes!);
    if (!str(first(v, ONNX.valueInfo.name)?.bytes).startsWith('past_key_values.')) continue;
    past++;
    const tensorType = first(decodeFields(first(v, ONNX.valueInfo.type)?.bytes ?? new Uint8Array()), ONNX.type.tensor)?.bytes;
    const shape = tensorType && first(decodeFields(tensorType), ONNX.type.shape)?.bytes;
    const dim = shape && all(decodeFields(shape), ONNX.type.dim)[1]?.bytes;
    const value = dim && first(decodeFields(dim), ONNX.type.dimValue)?.int;
    if (value !== undefined && value !== BigInt(kvHeads)) return false;
  }
  return past > 0;
}

/** A constant's element count and, for int64, its values. */
interface Constant {
  size: number;
  ints?: number[];
}

/** Initializers and Constant node outputs, by name. */
function constants(inits: Map<string, Tensor>, nodes: GraphNode[]): Map<string, Constant> {
  const out = new Map<string, Constant>();
  const fromTensor = (fields: WireField[]): Constant => {
    const dims = int64s(fields, ONNX.tensor.dims);
    const c: Constant = { size: dims.reduce((a, b) => a * b, 1) };
    if (Number(first(fields, ONNX.tensor.dataType)?.int ?? 0n) === ONNX.dtype.INT64) {
      const raw = first(fields, ONNX.tensor.rawData)?.bytes;
      c.ints = raw
        ? Array.from(new BigInt64Array(raw.slice().buffer), Number) // aligned copy
        : int64s(fields, ONNX.tensor.int64Data);
    }
    return c;
  };
  for (const t of inits.values()) out.set(t.name, fromTensor(t.fields));
  for (const n of nodes) {
    if (n.opType !== 'Constant' || n.domain) continue;
    for (const a of all(n.fields, ONNX.node.attribute)) {
      const af = decodeFields(a.bytes!);
      const name = str(first(af, ONNX.attr.name)?.bytes);
      const t = first(af, ONNX.attr.t)?.bytes;
      if (name === 'value' && t) out.set(n.outputs[0]!, fromTensor(decodeFields(t)));
      else if (name === 'value_int') {
        out.set(n.outputs[0]!, { size: 1, ints: [Number(BigInt.asIntN(64, first(af, ONNX.attr.i)?.int ?? 0n))] });
      } else if (name === 'value_float') out.set(n.outputs[0]!, { size: 1 });
    }
  }
  return out;
}

function intsAttr(n: GraphNode, name: string): number[] | undefined {
  for (const a of all(n.fields, ONNX.node.attribute)) {
    const af = decodeFields(a.bytes!);
    if (str(first(af, ONNX.attr.name)?.bytes) === name) return int64s(af, ONNX.attr.ints);
  }
  return undefined;
}

/** A copy of `n` (its op, domain and attributes) with other inputs, outputs and name. */
function renamed(n: GraphNode, inputs: string[], outputs: string[], name: string): WireWriter {
  const w = new WireWriter();
  for (const i of inputs) w.string(ONNX.node.input, i);
  for (const o of outputs) w.string(ONNX.node.output, o);
  w.string(ONNX.node.name, name);
  for (const f of n.fields) if (f.no !== ONNX.node.input && f.no !== ONNX.node.output && f.no !== ONNX.node.name) w.field(f);
  return w;
}

/** Adds to `removed` every node whose outputs nothing reads any more (ONNX ops have no side effects). */
function sweepUnused(nodes: GraphNode[], removed: Set<GraphNode>, alsoRead: Set<string>): void {
  for (let changed = true; changed;) {
    changed = false;
    const read = new Set<string>(alsoRead);
    for (const n of nodes) if (!removed.has(n)) { for (const i of n.inputs) read.add(i); }
    for (const n of nodes) {
      if (!removed.has(n) && n.outputs.every((o) => !o || !read.has(o))) (removed.add(n), (changed = true));
    }
  }
}

function int64Tensor(name: string, values: number[]): WireWriter {
  const w = new WireWriter().varint(ONNX.tensor.dims, values.length).varint(ONNX.tensor.dataType, ONNX.dtype.INT64);
  return w.string(ONNX.tensor.name, name).bytes(ONNX.tensor.rawData, new Uint8Array(BigInt64Array.from(values, BigInt).buffer));
}

/** Inline raw data above this size is pointed at in the model's file rather than copied. */
const EXTERNAL_MIN = 1024;

/** An initializer whose inline raw data (a view into `file`) is written as external data at its offset there. */
function pointInto(file: Uint8Array, fields: WireField[], fileName: string): WireWriter {
  const raw = first(fields, ONNX.tensor.rawData)?.bytes;
  const w = new WireWriter();
  if (!raw || raw.byteLength < EXTERNAL_MIN || raw.buffer !== file.buffer) {
    for (const f of fields) w.field(f);
    return w;
  }
  for (const f of fields) if (f.no !== ONNX.tensor.rawData) w.field(f);
  const entry = (key: string, value: string) => new WireWriter().string(ONNX.entry.key, key).string(ONNX.entry.value, value);
  w.message(ONNX.tensor.externalData, entry('location', fileName));
  w.message(ONNX.tensor.externalData, entry('offset', String(raw.byteOffset - file.byteOffset)));
  w.message(ONNX.tensor.externalData, entry('length', String(raw.byteLength)));
  return w.varint(ONNX.tensor.dataLocation, 1);
}
