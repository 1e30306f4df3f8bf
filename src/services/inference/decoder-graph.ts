/**
 * Rewrites of a text decoder's graph, made where its session is created (CPU and WASM, in the inference
 * thread: ./ort-sessions.ts):
 *
 * - its attention reads the KV heads unrepeated (./grouped-attention.ts);
 * - each layer's new keys and values, the positions a call adds to the cache, become outputs of their own
 *   (./new-key-values.ts), so a decode loop can keep its cache in place and fetch only those;
 * - each rotary position embedding is one operator instead of a dozen small ones (./rotary-embedding.ts);
 * - for the in-place cache, each layer's attention reads its past and its new positions apart, so no step
 *   copies the whole cache into a `present` it does not fetch (./past-and-new.ts).
 *
 * Works on the protobuf wire format (../models/onnx-wire.ts): what an edit does not touch is written back
 * byte for byte. A graph that has neither shape is used as it is.
 */
import {
  all,
  containsBytes,
  decodeFields,
  first,
  type GraphNode,
  hasSubgraph,
  indexGraph,
  int64s,
  modelGraph,
  ONNX,
  onnxOpset,
  str,
  type Tensor,
  tensorTypeOf,
  type WireField,
  WireWriter,
  withGraph,
} from '../models/onnx-wire.ts';
import { groupAttention } from './grouped-attention.ts';
import { exposeNewKeyValues } from './new-key-values.ts';
import { attendPastAndNew } from './past-and-new.ts';
import { fuseRotaryEmbedding } from './rotary-embedding.ts';

/** A decoder's attention heads, from its config. */
export interface DecoderShape {
  heads: number;
  kvHeads: number;
  /** Size of one head, where the config gives it (or its hidden size). */
  headDim?: number;
}

/** The decoder's head counts (of its text model for a vision-language config), when the config gives them. */
export function decoderShape(config: Record<string, unknown>): DecoderShape | undefined {
  const c = (config.text_config ?? config) as {
    num_attention_heads?: number;
    num_key_value_heads?: number;
    head_dim?: number;
    hidden_size?: number;
  };
  const heads = Number(c.num_attention_heads), kvHeads = Number(c.num_key_value_heads ?? c.num_attention_heads);
  const headDim = Number(c.head_dim ?? Number(c.hidden_size) / heads);
  if (!Number.isInteger(heads) || !Number.isInteger(kvHeads) || kvHeads <= 0 || heads < kvHeads || heads % kvHeads) return undefined;
  return Number.isInteger(headDim) && headDim > 0 ? { heads, kvHeads, headDim } : { heads, kvHeads };
}

/**
 * The session option that carries a decoder's shape to where its session is created; taken out before
 * ONNX Runtime sees the options.
 */
export const DECODER_OPTION = 'svcDecoder';

/** Session options without ours. */
export function withoutDecoderOption<T extends Record<string, unknown>>(options: T): T {
  if (!(DECODER_OPTION in options)) return options;
  const { [DECODER_OPTION]: _, ...rest } = options;
  return rest as T;
}

/** A parsed graph and the edits made to it, written out by `rewriteDecoder`. */
export interface GraphEdit {
  nodes: GraphNode[];
  producer: Map<string, GraphNode>;
  consumers: Map<string, GraphNode[]>;
  /** Names of the graph's outputs, and their ValueInfoProto fields. */
  outputs: Map<string, WireField[]>;
  /** Initializers and Constant outputs: element count and, for int64, values. */
  constant: Map<string, Constant>;
  /** New nodes written at the index (among the graph's fields) of the node they replace. */
  replace: Map<number, WireWriter[]>;
  /** New nodes written after all others (nothing in the graph reads them). */
  appended: WireWriter[];
  removed: Set<GraphNode>;
  /** Names the new nodes read (so the sweep keeps their producers). */
  read: Set<string>;
  initializers: WireWriter[];
  newInputs: WireWriter[];
  newOutputs: WireWriter[];
  /** Operator set domains the new nodes use. */
  domains: Set<string>;
  /**
   * The graph's token ids input (`input_ids`, [batch, sequence]), where it has one: the new nodes take a call's
   * batch and sequence sizes from its shape rather than from a layer's values, so that what every layer
   * shares (the rotary rows, the past/new split) is made from the graph's inputs alone, before the first layer.
   */
  tokens?: string;
}

/** The one node reading `name`, when nothing else (not even the graph's outputs) does. */
export function onlyUse(g: GraphEdit, name: string): GraphNode | undefined {
  const c = g.consumers.get(name);
  return c?.length === 1 && !g.outputs.has(name) ? c[0] : undefined;
}

/** What `rewriteDecoder` did: the rewritten graph and how many places each edit changed. */
export interface RewrittenDecoder {
  bytes: Uint8Array;
  grouped: number;
  newKeyValues: number;
  rotary: number;
  /** Layers whose attention reads the past and the new positions apart (./past-and-new.ts). */
  pastAndNew: number;
}

/**
 * The rewritten decoder, or undefined when no edit applied. `pastAndNew` (for sessions the batch decoder's
 * in-place cache drives: CPU and WASM) also makes each layer's attention read its past and new positions
 * apart, the whole cache (`present.*`) computed only when a call asks for it.
 */
export function rewriteDecoder(
  model: Uint8Array,
  shape: DecoderShape,
  opts: { newKeyValues?: boolean; pastAndNew?: boolean } = {},
): RewrittenDecoder | undefined {
  if (!containsBytes(model, new TextEncoder().encode('past_key_values.'))) return undefined;
  const one = parseEdit(model);
  if (!one || !decoderWith(one.graph, shape.kvHeads)) return undefined;
  const grouped = groupAttention(one.g, shape);
  const newKeyValues = opts.newKeyValues === false ? 0 : exposeNewKeyValues(one.g);
  const rotary = fuseRotaryEmbedding(one.g, shape);
  if (!grouped && !newKeyValues && !rotary) return undefined;
  let bytes = writeEdit(one);
  // a second pass, over the nodes the first one wrote (the grouped attention's MatMuls)
  let pastAndNew = 0;
  const two = opts.pastAndNew && newKeyValues ? parseEdit(bytes) : undefined;
  if (two) {
    pastAndNew = attendPastAndNew(two.g, onnxOpset(two.fields));
    if (pastAndNew) bytes = writeEdit(two);
  }
  return { bytes, grouped, newKeyValues, rotary, pastAndNew };
}

interface ParsedEdit {
  fields: WireField[];
  graph: WireField[];
  g: GraphEdit;
}

/** A model's graph indexed for the edits; undefined without a graph, or with subgraphs. */
function parseEdit(model: Uint8Array): ParsedEdit | undefined {
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { fields, graph } = parsed;
  const { inits, nodes } = indexGraph(graph);
  // names used inside a subgraph are not listed as inputs: such a graph is left alone
  if (nodes.some(hasSubgraph)) return undefined;
  const g: GraphEdit = {
    nodes,
    producer: new Map(),
    consumers: new Map(),
    outputs: new Map(
      all(graph, ONNX.graph.output).map((f) => {
        const v = decodeFields(f.bytes!);
        return [str(first(v, ONNX.valueInfo.name)?.bytes), v];
      }),
    ),
    constant: constants(inits, nodes),
    replace: new Map(),
    appended: [],
    removed: new Set(),
    read: new Set(),
    initializers: [],
    newInputs: [],
    newOutputs: [],
    domains: new Set(),
    tokens: tokenInput(graph),
  };
  for (const n of nodes) {
    for (const o of n.outputs) g.producer.set(o, n);
    for (const i of n.inputs) {
      if (!i) continue;
      const c = g.consumers.get(i);
      if (c) c.push(n);
      else g.consumers.set(i, [n]);
    }
  }
  for (const o of g.outputs.keys()) g.read.add(o);
  return { fields, graph, g };
}

/** The model with the edits made: what they left unused swept, the operator sets they use imported. */
function writeEdit({ fields, graph, g }: ParsedEdit): Uint8Array {
  // what only the removed nodes used (the repeats' shape arithmetic) goes too
  sweepUnused(g.nodes, g.removed, g.read);
  const gone = new Set([...g.removed].map((n) => n.index));
  const w = new WireWriter();
  graph.forEach((f, index) => {
    if (f.no === ONNX.graph.node) {
      for (const r of g.replace.get(index) ?? []) w.message(ONNX.graph.node, r);
      if (!gone.has(index)) w.field(f);
    } else w.field(f);
  });
  for (const n of g.appended) w.message(ONNX.graph.node, n);
  for (const t of g.initializers) w.message(ONNX.graph.initializer, t);
  for (const i of g.newInputs) w.message(ONNX.graph.input, i);
  for (const o of g.newOutputs) w.message(ONNX.graph.output, o);
  const m = withGraph(fields, w);
  // the operator sets the new nodes come from (their domains' first version)
  const imported = new Set(all(fields, ONNX.model.opsetImport).map((f) => str(first(decodeFields(f.bytes!), ONNX.opset.domain)?.bytes)));
  for (const d of g.domains) {
    if (!imported.has(d)) m.message(ONNX.model.opsetImport, new WireWriter().string(ONNX.opset.domain, d).varint(ONNX.opset.version, 1));
  }
  return m.finish();
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
    const shape = first(tensorTypeOf(v) ?? [], ONNX.type.shape)?.bytes;
    const dim = shape && all(decodeFields(shape), ONNX.type.dim)[1]?.bytes;
    const value = dim && first(decodeFields(dim), ONNX.type.dimValue)?.int;
    if (value !== undefined && value !== BigInt(kvHeads)) return false;
  }
  return past > 0;
}

/** `input_ids`, where the graph takes it as an input of rank 2. */
function tokenInput(graph: WireField[]): string | undefined {
  for (const f of all(graph, ONNX.graph.input)) {
    const v = decodeFields(f.bytes!);
    if (str(first(v, ONNX.valueInfo.name)?.bytes) !== 'input_ids') continue;
    const shape = first(tensorTypeOf(v) ?? [], ONNX.type.shape)?.bytes;
    return shape && all(decodeFields(shape), ONNX.type.dim).length === 2 ? 'input_ids' : undefined;
  }
  return undefined;
}

/** A constant's element count and, for int64, its values. */
export interface Constant {
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

/** A copy of `n` (its op, domain and attributes) with other inputs, outputs and name. */
export function renamed(n: GraphNode, inputs: string[], outputs: string[], name: string): WireWriter {
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
