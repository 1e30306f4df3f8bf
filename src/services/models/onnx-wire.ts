/**
 * Just enough of the protobuf wire format to rewrite an ONNX model without a schema: a message is read as
 * its list of fields (number, wire type, bytes), the few fields a rewrite touches are decoded, and every
 * other field is written back byte for byte, so nothing the rewrite does not understand is lost (unknown
 * fields, metadata, value infos, functions). Field numbers are those of onnx/onnx.proto (IR version 10).
 */
import { concatBytes } from '../bytes.ts';

export interface WireField {
  no: number;
  /** 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32. */
  wt: 0 | 1 | 2 | 5;
  /** Varint value (wt 0). */
  int?: bigint;
  /** Payload bytes (wt 1, 2, 5). */
  bytes?: Uint8Array;
}

export function readVarint(buf: Uint8Array, pos: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [result, pos];
    shift += 7n;
    if (shift > 70n) throw new Error('varint too long');
  }
}

export function decodeFields(buf: Uint8Array): WireField[] {
  const out: WireField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [key, p1] = readVarint(buf, pos);
    pos = p1;
    const no = Number(key >> 3n);
    const wt = Number(key & 7n);
    if (wt === 0) {
      const [v, p2] = readVarint(buf, pos);
      pos = p2;
      out.push({ no, wt, int: v });
    } else if (wt === 1 || wt === 5) {
      const n = wt === 1 ? 8 : 4;
      if (pos + n > buf.length) throw new Error('truncated fixed field');
      out.push({ no, wt, bytes: buf.subarray(pos, pos + n) });
      pos += n;
    } else if (wt === 2) {
      const [len, p2] = readVarint(buf, pos);
      const end = p2 + Number(len);
      if (end > buf.length) throw new Error('truncated length-delimited field');
      out.push({ no, wt, bytes: buf.subarray(p2, end) });
      pos = end;
    } else {
      throw new Error(`unsupported wire type ${wt}`);
    }
  }
  return out;
}

function varintBytes(v: bigint): number[] {
  let x = BigInt.asUintN(64, v);
  const out: number[] = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return out;
}

/** Collects encoded pieces without copying large payloads until the end. */
export class WireWriter {
  readonly parts: Uint8Array[] = [];
  length = 0;

  #push(p: Uint8Array) {
    this.parts.push(p);
    this.length += p.byteLength;
  }
  #key(no: number, wt: number) {
    this.#push(Uint8Array.from(varintBytes(BigInt((no << 3) | wt))));
  }

  varint(no: number, v: number | bigint): this {
    this.#key(no, 0);
    this.#push(Uint8Array.from(varintBytes(BigInt(v))));
    return this;
  }
  bytes(no: number, b: Uint8Array): this {
    this.#key(no, 2);
    this.#push(Uint8Array.from(varintBytes(BigInt(b.byteLength))));
    this.#push(b);
    return this;
  }
  string(no: number, s: string): this {
    return this.bytes(no, new TextEncoder().encode(s));
  }
  message(no: number, w: WireWriter): this {
    this.#key(no, 2);
    this.#push(Uint8Array.from(varintBytes(BigInt(w.length))));
    for (const p of w.parts) this.#push(p);
    return this;
  }
  float(no: number, f: number): this {
    this.#key(no, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, f, true);
    this.#push(b);
    return this;
  }
  field(f: WireField): this {
    if (f.wt === 0) return this.varint(f.no, f.int!);
    if (f.wt === 2) return this.bytes(f.no, f.bytes!);
    this.#key(f.no, f.wt);
    this.#push(f.bytes!);
    return this;
  }

  finish(): Uint8Array {
    return concatBytes(this.parts);
  }
}

const utf8 = new TextDecoder();
export const str = (b: Uint8Array | undefined) => (b ? utf8.decode(b) : '');

/** Repeated int64 field that may be packed (wt 2) or not (wt 0). */
export function int64s(fields: WireField[], no: number): number[] {
  const out: number[] = [];
  for (const f of fields) {
    if (f.no !== no) continue;
    if (f.wt === 0) out.push(Number(BigInt.asIntN(64, f.int!)));
    else if (f.wt === 2) {
      let pos = 0;
      while (pos < f.bytes!.length) {
        const [v, p] = readVarint(f.bytes!, pos);
        out.push(Number(BigInt.asIntN(64, v)));
        pos = p;
      }
    }
  }
  return out;
}

export const first = (fields: WireField[], no: number) => fields.find((f) => f.no === no);
export const all = (fields: WireField[], no: number) => fields.filter((f) => f.no === no);

/** The tensor type (element type, shape) of a ValueInfoProto's fields, when it has one. */
export function tensorTypeOf(valueInfo: WireField[]): WireField[] | undefined {
  const type = first(valueInfo, ONNX.valueInfo.type)?.bytes;
  const tensor = type && first(decodeFields(type), ONNX.type.tensor)?.bytes;
  return tensor ? decodeFields(tensor) : undefined;
}

/** ONNX field numbers used by the rewrite. */
export const ONNX = {
  model: { irVersion: 1, opsetImport: 8, graph: 7 },
  opset: { domain: 1, version: 2 },
  graph: { node: 1, name: 2, initializer: 5, input: 11, output: 12 },
  /** ValueInfoProto */
  valueInfo: { name: 1, type: 2 },
  /** TypeProto.tensor_type, TypeProto.Tensor.elem_type and .shape, TensorShapeProto.dim, Dimension.dim_value */
  type: { tensor: 1, elemType: 1, shape: 2, dim: 1, dimValue: 1 },
  node: { input: 1, output: 2, name: 3, opType: 4, attribute: 5, domain: 7 },
  attr: { name: 1, f: 2, i: 3, t: 5, g: 6, ints: 8, graphs: 11, type: 20 },
  tensor: { dims: 1, dataType: 2, floatData: 4, int32Data: 5, int64Data: 7, name: 8, rawData: 9, externalData: 13, dataLocation: 14 },
  entry: { key: 1, value: 2 },
  /** AttributeProto.AttributeType */
  attrType: { FLOAT: 1, INT: 2, TENSOR: 4, GRAPH: 5, GRAPHS: 10 },
  /** TensorProto.DataType */
  dtype: { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, BOOL: 9 },
} as const;

/** An initializer of a graph, with its position among the graph's fields. */
export interface Tensor {
  index: number;
  fields: WireField[];
  name: string;
  dims: number[];
  dataType: number;
}
/** A node of a graph, with its raw bytes and position among the graph's fields. */
export interface GraphNode {
  index: number;
  raw: Uint8Array;
  fields: WireField[];
  name: string;
  inputs: string[];
  outputs: string[];
  opType: string;
  domain: string;
}

/** A TensorProto (its fields but raw data) whose data lies in `fileName` at `offset`, `length` bytes. */
export function externalTensor(fields: WireField[], fileName: string, offset: number, length: number): WireWriter {
  const w = new WireWriter();
  // the tensor's own data_location (an exporter may write DEFAULT) is left out: ours says EXTERNAL
  for (const f of fields) if (f.no !== ONNX.tensor.rawData && f.no !== ONNX.tensor.dataLocation) w.field(f);
  const entry = (key: string, value: string) => new WireWriter().string(ONNX.entry.key, key).string(ONNX.entry.value, value);
  w.message(ONNX.tensor.externalData, entry('location', fileName));
  w.message(ONNX.tensor.externalData, entry('offset', String(offset)));
  w.message(ONNX.tensor.externalData, entry('length', String(length)));
  return w.varint(ONNX.tensor.dataLocation, 1);
}

/** The edits `editedGraph` writes into a graph. */
export interface GraphFieldEdits {
  /** Nodes written in place of the node at that index among the graph's fields. */
  nodes?: Map<number, WireWriter | WireWriter[]>;
  /** Initializers left out, by name. */
  drop?: Set<string>;
  /** Initializers written after the others. */
  added?: WireWriter[];
}

/** A graph's fields written back with `edits`; everything else byte for byte. */
export function editedGraph(graph: WireField[], edits: GraphFieldEdits): WireWriter {
  const g = new WireWriter();
  graph.forEach((f, index) => {
    const nodes = edits.nodes?.get(index);
    if (nodes) {
      for (const n of [nodes].flat()) g.message(ONNX.graph.node, n);
    } else if (f.no === ONNX.graph.initializer && edits.drop?.size) {
      if (!edits.drop.has(str(first(decodeFields(f.bytes!), ONNX.tensor.name)?.bytes))) g.field(f);
    } else g.field(f);
  });
  for (const t of edits.added ?? []) g.message(ONNX.graph.initializer, t);
  return g;
}

/** A serialized model's fields and its graph's fields; undefined when it has no graph. */
export function modelGraph(model: Uint8Array): { fields: WireField[]; graph: WireField[] } | undefined {
  const fields = decodeFields(model);
  const graph = first(fields, ONNX.model.graph)?.bytes;
  return graph ? { fields, graph: decodeFields(graph) } : undefined;
}

/** A model's fields written back in order, with `graph` in place of its graph. */
export function withGraph(fields: WireField[], graph: WireWriter): WireWriter {
  const m = new WireWriter();
  for (const f of fields) {
    if (f.no === ONNX.model.graph) m.message(ONNX.model.graph, graph);
    else m.field(f);
  }
  return m;
}

/** Initializers by name and nodes in order, from a decoded GraphProto. */
export function indexGraph(graph: WireField[]): { inits: Map<string, Tensor>; nodes: GraphNode[] } {
  const inits = new Map<string, Tensor>();
  const nodes: GraphNode[] = [];
  graph.forEach((f, index) => {
    if (f.no === ONNX.graph.initializer) {
      const fields = decodeFields(f.bytes!);
      const name = str(first(fields, ONNX.tensor.name)?.bytes);
      inits.set(name, {
        index,
        fields,
        name,
        dims: int64s(fields, ONNX.tensor.dims),
        dataType: Number(first(fields, ONNX.tensor.dataType)?.int ?? 0n),
      });
    } else if (f.no === ONNX.graph.node) {
      const fields = decodeFields(f.bytes!);
      nodes.push({
        index,
        raw: f.bytes!,
        fields,
        name: str(first(fields, ONNX.node.name)?.bytes),
        inputs: all(fields, ONNX.node.input).map((x) => str(x.bytes)),
        outputs: all(fields, ONNX.node.output).map((x) => str(x.bytes)),
        opType: str(first(fields, ONNX.node.opType)?.bytes),
        domain: str(first(fields, ONNX.node.domain)?.bytes),
      });
    }
  });
  return { inits, nodes };
}

/** Whether a node carries a subgraph (If, Loop, Scan): names used inside it are not listed as its inputs. */
export function hasSubgraph(n: GraphNode): boolean {
  return all(n.fields, ONNX.node.attribute).some((a) => {
    const t = Number(first(decodeFields(a.bytes!), ONNX.attr.type)?.int ?? 0n);
    return t === ONNX.attrType.GRAPH || t === ONNX.attrType.GRAPHS;
  });
}

/** A NodeProto; `ints` are INT attributes, `more` other attributes (graphAttr, tensorAttr). */
export function node(
  opType: string,
  inputs: string[],
  outputs: string[],
  name: string,
  domain = '',
  ints: Record<string, number> = {},
  more: WireWriter[] = [],
): WireWriter {
  const w = new WireWriter();
  for (const i of inputs) w.string(ONNX.node.input, i);
  for (const o of outputs) w.string(ONNX.node.output, o);
  w.string(ONNX.node.name, name).string(ONNX.node.opType, opType);
  for (const [k, v] of Object.entries(ints)) {
    w.message(
      ONNX.node.attribute,
      new WireWriter().string(ONNX.attr.name, k).varint(ONNX.attr.i, v).varint(ONNX.attr.type, ONNX.attrType.INT),
    );
  }
  for (const a of more) w.message(ONNX.node.attribute, a);
  if (domain) w.string(ONNX.node.domain, domain);
  return w;
}

/** An attribute holding a graph (an If's branches), for `node`'s `more`. */
export function graphAttr(name: string, graph: WireWriter): WireWriter {
  return new WireWriter().string(ONNX.attr.name, name).message(ONNX.attr.g, graph).varint(ONNX.attr.type, ONNX.attrType.GRAPH);
}

/** An attribute holding a tensor (a Constant's value), for `node`'s `more`. */
export function tensorAttr(name: string, t: WireWriter): WireWriter {
  return new WireWriter().string(ONNX.attr.name, name).message(ONNX.attr.t, t).varint(ONNX.attr.type, ONNX.attrType.TENSOR);
}

/** The element type of a tensor ValueInfoProto (float when it does not say). */
export function elemTypeOf(valueInfo: WireField[]): number {
  return Number(first(tensorTypeOf(valueInfo) ?? [], ONNX.type.elemType)?.int ?? ONNX.dtype.FLOAT);
}

/** A tensor ValueInfoProto with an element type and, when given, fixed dimensions (`[]`: a scalar). */
export function tensorValueInfo(name: string, elem: number, dims?: number[]): WireWriter {
  const tensor = new WireWriter().varint(ONNX.type.elemType, elem);
  if (dims) {
    const shape = new WireWriter();
    for (const d of dims) shape.message(ONNX.type.dim, new WireWriter().varint(ONNX.type.dimValue, d));
    tensor.message(ONNX.type.shape, shape);
  }
  return new WireWriter().string(ONNX.valueInfo.name, name).message(
    ONNX.valueInfo.type,
    new WireWriter().message(ONNX.type.tensor, tensor),
  );
}

/** The dimensions a tensor ValueInfoProto declares: a number where fixed, -1 where named or unknown. */
export function declaredDims(valueInfo: WireField[]): number[] | undefined {
  const shape = first(tensorTypeOf(valueInfo) ?? [], ONNX.type.shape)?.bytes;
  if (!shape) return undefined;
  return all(decodeFields(shape), ONNX.type.dim).map((d) => {
    const v = first(decodeFields(d.bytes!), ONNX.type.dimValue)?.int;
    return v === undefined ? -1 : Number(v);
  });
}

/** The version of the default (ai.onnx) operator set a model imports; 0 when none. */
export function onnxOpset(fields: WireField[]): number {
  const opset = all(fields, ONNX.model.opsetImport).map((f) => decodeFields(f.bytes!))
    .find((o) => ['', 'ai.onnx'].includes(str(first(o, ONNX.opset.domain)?.bytes)));
  return Number(first(opset ?? [], ONNX.opset.version)?.int ?? 0n);
}

/** A node's INT attribute. */
export function intAttr(n: GraphNode, name: string): number | undefined {
  for (const a of all(n.fields, ONNX.node.attribute)) {
    const af = decodeFields(a.bytes!);
    if (str(first(af, ONNX.attr.name)?.bytes) === name) return Number(BigInt.asIntN(64, first(af, ONNX.attr.i)?.int ?? 0n));
  }
  return undefined;
}

/** A node's INTS attribute. */
export function intsAttr(n: GraphNode, name: string): number[] | undefined {
  for (const a of all(n.fields, ONNX.node.attribute)) {
    const af = decodeFields(a.bytes!);
    if (str(first(af, ONNX.attr.name)?.bytes) === name) return int64s(af, ONNX.attr.ints);
  }
  return undefined;
}

/** A TensorProto with inline raw data; `keep` carries over fields of the original other than data and shape. */
export function tensor(name: string, dims: number[], dataType: number, raw: Uint8Array, keep: WireField[] = []): WireWriter {
  const w = new WireWriter();
  for (const d of dims) w.varint(ONNX.tensor.dims, d);
  w.varint(ONNX.tensor.dataType, dataType).string(ONNX.tensor.name, name).bytes(ONNX.tensor.rawData, raw);
  const replaced = new Set<number>([
    ONNX.tensor.dims,
    ONNX.tensor.dataType,
    ONNX.tensor.name,
    ONNX.tensor.rawData,
    ONNX.tensor.floatData,
    ONNX.tensor.externalData,
    ONNX.tensor.dataLocation,
  ]);
  for (const f of keep) if (!replaced.has(f.no)) w.field(f);
  return w;
}

/** An int64 TensorProto holding `values` (a vector, or the shape `dims`: `[]` for a scalar). */
export function int64Tensor(name: string, values: number[], dims = [values.length]): WireWriter {
  return tensor(name, dims, ONNX.dtype.INT64, new Uint8Array(BigInt64Array.from(values, BigInt).buffer));
}

/** Whether an initializer's data lies in an external file. */
export const isExternal = (t: Tensor) => Number(all(t.fields, ONNX.tensor.dataLocation).at(-1)?.int ?? 0n) === 1; // the last one counts, as in protobuf

/** An initializer's external data entries (location, offset, length), by key. */
export function externalEntries(t: Tensor): Map<string, string> {
  return new Map(
    all(t.fields, ONNX.tensor.externalData).map((f) => {
      const e = decodeFields(f.bytes!);
      return [str(first(e, ONNX.entry.key)?.bytes), str(first(e, ONNX.entry.value)?.bytes)] as const;
    }),
  );
}

/** The files a graph's external initializers name (relative to the model's folder). */
function externalFiles(inits: Map<string, Tensor>): string[] {
  return [...new Set([...inits.values()].filter(isExternal).map((t) => externalEntries(t).get('location') ?? ''))];
}

/** The same, from a serialized model. */
export function externalFilesOf(model: Uint8Array): string[] {
  if (!containsBytes(model, new TextEncoder().encode('location'))) return []; // every external initializer has that key
  const graph = first(decodeFields(model), ONNX.model.graph)?.bytes;
  return graph ? externalFiles(indexGraph(decodeFields(graph)).inits) : [];
}

/** The names of a serialized model's graph outputs. */
export function graphOutputNames(model: Uint8Array): string[] {
  const graph = first(decodeFields(model), ONNX.model.graph)?.bytes;
  return graph
    ? all(decodeFields(graph), ONNX.graph.output).map((f) => str(first(decodeFields(f.bytes!), ONNX.valueInfo.name)?.bytes))
    : [];
}

/** Whether `needle` occurs in `hay` (a name inside a serialized model, node or graph output). */
export function containsBytes(hay: Uint8Array, needle: Uint8Array): boolean {
  if (!needle.length) return true;
  const first = needle[0];
  outer: for (let i = hay.indexOf(first!); i >= 0 && i + needle.length <= hay.length; i = hay.indexOf(first!, i + 1)) {
    for (let k = 1; k < needle.length; k++) if (hay[i + k] !== needle[k]) continue outer;
    return true;
  }
  return false;
}
