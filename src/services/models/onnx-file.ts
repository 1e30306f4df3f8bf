/**
 * A model file's graph without its weights. A single-file ONNX model (every hub file under protobuf's 2 GB
 * limit that was saved without external data) holds its weights inline; reading it whole to edit the graph
 * made the process hold the whole file once more while ONNX Runtime loaded it. Here the file is walked field
 * by field with positioned reads: every initializer's inline raw data of at least `EXTERNAL_MIN` bytes is
 * skipped and written as external data pointing at its place in the same file; everything else (nodes,
 * small tensors, inputs, metadata) is read and kept byte for byte. ONNX Runtime then reads those weights
 * from the file itself, as it does for models saved with external data.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import {
  decodeFields,
  externalEntries,
  externalTensor,
  isExternal,
  ONNX,
  readVarint,
  type Tensor,
  type WireField,
  WireWriter,
} from './onnx-wire.ts';

/** Inline raw data of at least this size is pointed at in the file rather than read. */
const EXTERNAL_MIN = 1024;
/** Bytes read ahead for small reads. */
const WINDOW = 1 << 20;

/** Bytes of a serialized model, read at positions: a file's or a buffer's. */
interface Source {
  size: number;
  /** `length` bytes at `pos`, valid until the model written from them is finished. */
  read(pos: number, length: number): Uint8Array;
}

/** Positioned reads of one open file; small ones served from a window read ahead (a graph is many small fields). */
class FileSource implements Source {
  #window: Uint8Array = new Uint8Array(0);
  #at = 0;

  constructor(readonly fd: number, readonly size: number) {}

  /** A copy of its own: the window is reused. */
  read(pos: number, length: number): Uint8Array {
    if (length > WINDOW / 4 || pos + length > this.size) return this.direct(pos, length);
    if (pos < this.#at || pos + length > this.#at + this.#window.length) {
      this.#window = this.direct(pos, Math.min(WINDOW, this.size - pos));
      this.#at = pos;
    }
    return this.#window.slice(pos - this.#at, pos - this.#at + length);
  }

  /** `length` bytes at `pos`, read as they are asked for (no window). */
  direct(pos: number, length: number): Uint8Array {
    if (pos + length > this.size) throw new Error(`truncated model file: ${length} bytes wanted at ${pos}, the file has ${this.size}`);
    const out = new Uint8Array(length);
    for (let have = 0; have < length;) {
      const n = readSync(this.fd, out, have, length - have, pos + have);
      if (n <= 0) throw new Error(`model file ended early: ${length} bytes wanted at ${pos}`);
      have += n;
    }
    return out;
  }
}

/** A model in memory: views, no copies. */
function memorySource(bytes: Uint8Array): Source {
  return {
    size: bytes.length,
    read(pos, length) {
      if (pos + length > bytes.length) throw new Error(`truncated model: ${length} bytes wanted at ${pos}, it has ${bytes.length}`);
      return bytes.subarray(pos, pos + length);
    },
  };
}

function varintAt(src: Source, pos: number): [bigint, number] {
  const [v, used] = readVarint(src.read(pos, Math.min(10, src.size - pos)), 0);
  return [v, pos + used];
}

/** The field at `pos`: its number, wire type, where its payload starts and ends. */
function fieldAt(src: Source, pos: number): { no: number; wt: number; start: number; end: number } {
  const [key, p] = varintAt(src, pos);
  const no = Number(key >> 3n), wt = Number(key & 7n);
  if (wt === 0) return { no, wt, start: p, end: varintAt(src, p)[1] };
  if (wt === 1 || wt === 5) return { no, wt, start: p, end: p + (wt === 1 ? 8 : 4) };
  if (wt !== 2) throw new Error(`unsupported wire type ${wt}`);
  const [len, start] = varintAt(src, p);
  const end = start + Number(len);
  if (end > src.size) throw new Error('truncated length-delimited field');
  return { no, wt, start, end };
}

/** A graph without its weights and how many weights it points at. */
export interface PointedGraph {
  bytes: Uint8Array;
  pointed: number;
}

/**
 * The model at `path` with its inline weights pointed at where they lie in that file (named `name`, relative
 * to the model's folder), read without those weights; undefined when it has no graph.
 */
export function graphOfFile(path: string, name = basename(path)): PointedGraph | undefined {
  const fd = openSync(path, 'r');
  try {
    return pointAtWeights(new FileSource(fd, fstatSync(fd).size), name);
  } finally {
    closeSync(fd);
  }
}

/**
 * The same for a model in memory: its weights pointed at in those same bytes, to be handed over as an
 * external data file named `name`. onnxruntime-web copies each weight from there once; parsing them inline,
 * it held the model several times over in its memory, which never shrinks.
 */
export function graphOfBytes(model: Uint8Array, name: string): PointedGraph | undefined {
  return pointAtWeights(memorySource(model), name);
}

function pointAtWeights(src: Source, name: string): PointedGraph | undefined {
  const model = new WireWriter();
  const counted = { pointed: 0 };
  let graph = false;
  for (let pos = 0; pos < src.size;) {
    const f = fieldAt(src, pos);
    if (f.no === ONNX.model.graph && f.wt === 2) {
      const g = new WireWriter();
      for (let at = f.start; at < f.end;) at = graphField(src, g, at, name, counted);
      model.message(ONNX.model.graph, g);
      graph = true;
    } else model.field(decodeFields(src.read(pos, f.end - pos))[0]!);
    pos = f.end;
  }
  return graph ? { bytes: model.finish(), pointed: counted.pointed } : undefined;
}

/** One field of the graph: an initializer walked, anything else copied. Returns the next position. */
function graphField(src: Source, g: WireWriter, pos: number, name: string, counted: { pointed: number }): number {
  const f = fieldAt(src, pos);
  if (f.no === ONNX.graph.initializer && f.wt === 2) {
    g.message(ONNX.graph.initializer, initializer(src, f.start, f.end, name, counted));
  } else g.field(decodeFields(src.read(pos, f.end - pos))[0]!);
  return f.end;
}

/** A TensorProto whose raw data, where not tiny, stays in the file. */
function initializer(src: Source, start: number, end: number, name: string, counted: { pointed: number }): WireWriter {
  const fields: WireField[] = [];
  let raw: { offset: number; length: number } | undefined;
  for (let pos = start; pos < end;) {
    const f = fieldAt(src, pos);
    if (f.no === ONNX.tensor.rawData && f.wt === 2 && f.end - f.start >= EXTERNAL_MIN) raw = { offset: f.start, length: f.end - f.start };
    else fields.push(decodeFields(src.read(pos, f.end - pos))[0]!);
    pos = f.end;
  }
  if (!raw) {
    const w = new WireWriter();
    for (const f of fields) w.field(f);
    return w;
  }
  counted.pointed++;
  return externalTensor(fields, name, raw.offset, raw.length);
}

/**
 * An initializer's bytes from the external data file it names beside the model at `modelPath`; undefined
 * for a location outside the model's folder (ONNX Runtime refuses those too).
 */
export function externalBytes(modelPath: string, t: Tensor): Uint8Array | undefined {
  const e = externalEntries(t);
  const location = e.get('location');
  if (!location || !isExternal(t) || isAbsolute(location) || normalize(location).split(/[\\/]/)[0] === '..') return undefined;
  const offset = Number(e.get('offset') ?? 0), length = e.get('length');
  const fd = openSync(join(dirname(modelPath), location), 'r');
  try {
    const file = new FileSource(fd, fstatSync(fd).size);
    return file.direct(offset, length === undefined ? file.size - offset : Number(length));
  } finally {
    closeSync(fd);
  }
}
