/**
 * The thread side of ONNX Runtime sessions run off the event loop (./ort-thread.ts is the other side). A
 * session computes on the thread that calls `run` (onnxruntime-web always; onnxruntime-node's `run` too,
 * synchronously), so the sessions live here, in a thread of their own, and the server's thread only sends
 * inputs and receives outputs. Registered as worker operations; the sessions stay in this module between
 * calls, so they are used from one dedicated thread only.
 */
import { readFileSync } from 'node:fs';
import type { OpContext } from '../workers/serve-operations.ts';
import { configureOrtWeb, type OrtPackage, type OrtWeb } from './backend.ts';
import { nbitsToInt8 } from './wasm-q4.ts';

/** A tensor as it crosses threads: its buffer moves (or is copied), the rest is plain data. */
export interface WireTensor {
  type: string;
  dims: number[];
  data: ArrayBufferView;
}

/** A float32 tensor lent to the thread: a view of one of the buffers that moved with the call. */
export interface LentTensor {
  dims: number[];
  /** Index of its buffer among the call's lent buffers. */
  buffer: number;
  offset: number;
  length: number;
}

/** One copy between lent buffers: `length` floats from byte `fromOffset` of one to byte `toOffset` of another. */
export interface CopyWire {
  from: number;
  fromOffset: number;
  length: number;
  to: number;
  toOffset: number;
}

export interface OrtThreadInit {
  /** The process's ONNX Runtime (./backend.ts binds one per process): the thread loads the same package. */
  runtime: OrtPackage;
  /** onnxruntime-web's threads (native sessions take theirs from their session options). */
  threads: number;
  wasmPaths?: string;
}

/** What the server's thread needs of a session to stand in for it. */
export interface SessionInfo {
  id: number;
  inputNames: string[];
  outputNames: string[];
  inputMetadata: unknown[];
  outputMetadata: unknown[];
  /** MatMulNBits weights run as int8 MatMulInteger in this session (WASM only). */
  int8From4Bit: number;
}

type Session = Awaited<ReturnType<OrtWeb['InferenceSession']['create']>>;
type ExternalData = { path: string; data: string | Uint8Array }[];

let ort: Promise<OrtWeb> | undefined;
/** The package the thread's sessions run on (one per process). */
let runtimeOfSessions: OrtPackage | undefined;
const sessions = new Map<number, Session>();
let nextId = 1;

const bytes = (v: string | Uint8Array) => (typeof v === 'string' ? new Uint8Array(readFileSync(v)) : v);

function runtime(init: OrtThreadInit): Promise<OrtWeb> {
  runtimeOfSessions ??= init.runtime;
  // onnxruntime-node has the same session and tensor API (both are onnxruntime-common's)
  return ort ??= init.runtime === 'onnxruntime-node'
    ? import('onnxruntime-node') as unknown as Promise<OrtWeb>
    : import('onnxruntime-web').then((m) => configureOrtWeb(m as unknown as OrtWeb, init));
}

async function create(
  [init, model, options]: [OrtThreadInit, string | Uint8Array, Record<string, unknown> & { externalData?: ExternalData }],
  _ctx?: OpContext,
): Promise<SessionInfo> {
  const o = await runtime(init);
  let session: Session;
  let int8: ReturnType<typeof nbitsToInt8> | undefined;
  if (init.runtime === 'onnxruntime-node') {
    // the native runtime reads a model path (and its external data beside it) itself
    session = await o.InferenceSession.create(model as never, options as never);
  } else {
    const externalData = options.externalData?.map((d) => ({ ...d, data: bytes(d.data) }));
    const graph = bytes(model);
    // 4-bit weights run as int8 here: ONNX Runtime's WASM build has no 4-bit kernel (./wasm-q4.ts)
    int8 = nbitsToInt8(graph);
    session = await o.InferenceSession.create(int8?.bytes ?? graph, { ...options, ...(externalData ? { externalData } : {}) } as never);
  }
  const id = nextId++;
  sessions.set(id, session);
  const s = session as unknown as { inputMetadata?: unknown[]; outputMetadata?: unknown[] };
  return {
    id,
    inputNames: [...session.inputNames],
    outputNames: [...session.outputNames],
    inputMetadata: [...(s.inputMetadata ?? [])],
    outputMetadata: [...(s.outputMetadata ?? [])],
    int8From4Bit: int8?.converted ?? 0,
  };
}

function sessionOf(id: number): Session {
  const session = sessions.get(id);
  if (!session) throw new Error(`session ${id} is gone (its inference thread was restarted): load the model again`);
  return session;
}

/** Whole-buffer views of the lent buffers: the pool moves them back rather than copying them. */
const sentBack = (buffers: ArrayBuffer[]) => buffers.map((b) => new Uint8Array(b));

async function run([id, feeds]: [number, Record<string, WireTensor>]): Promise<Record<string, WireTensor>> {
  const session = sessionOf(id);
  const o = await ort!;
  const inputs: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(feeds)) inputs[name] = new o.Tensor(t.type as never, t.data as never, t.dims);
  const out = await session.run(inputs as never);
  const result: Record<string, WireTensor> = {};
  for (const [name, t] of Object.entries(out)) {
    result[name] = { type: t.type, dims: [...t.dims], data: t.data as ArrayBufferView };
    t.dispose?.();
  }
  return result;
}

/** A run on lent buffers (ThreadSession.runLending): outputs written in place, every lent buffer sent back. */
async function runLending(
  [id, feeds, fetches, buffers]: [number, Record<string, WireTensor | LentTensor>, Record<string, LentTensor>, ArrayBuffer[]],
): Promise<{ outputs: Record<string, WireTensor>; buffers: Uint8Array[] }> {
  const session = sessionOf(id);
  const o = await ort!;
  const view = (t: LentTensor) => new o.Tensor('float32', new Float32Array(buffers[t.buffer]!, t.offset, t.length), t.dims);
  const inputs: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(feeds)) {
    inputs[name] = 'data' in t ? new o.Tensor(t.type as never, t.data as never, t.dims) : view(t);
  }
  // every output is fetched: those without a lent buffer (null) are allocated by ONNX Runtime
  const into: Record<string, InstanceType<OrtWeb['Tensor']> | null> = {};
  for (const name of session.outputNames) into[name] = name in fetches ? view(fetches[name]!) : null;
  // onnxruntime-node writes preallocated outputs in place; onnxruntime-web leaves them unwritten and
  // returns its own, copied in here (in this thread, into the lent buffers)
  const native = runtimeOfSessions === 'onnxruntime-node';
  const out = native ? await session.run(inputs as never, into as never) : await session.run(inputs as never);
  const outputs: Record<string, WireTensor> = {};
  for (const [name, t] of Object.entries(out)) {
    if (name in fetches) {
      if (!native) (into[name]!.data as Float32Array).set(t.data as Float32Array);
      continue;
    }
    outputs[name] = { type: t.type, dims: [...t.dims], data: t.data as ArrayBufferView };
  }
  return { outputs, buffers: sentBack(buffers) };
}

/** Copies between lent buffers (ThreadSession.copyLending), done here; every buffer sent back. */
function copy([moves, buffers]: [CopyWire[], ArrayBuffer[]]): Uint8Array[] {
  for (const m of moves) {
    new Float32Array(buffers[m.to]!, m.toOffset, m.length).set(new Float32Array(buffers[m.from]!, m.fromOffset, m.length));
  }
  return sentBack(buffers);
}

async function release([id]: [number]): Promise<void> {
  const session = sessions.get(id);
  sessions.delete(id);
  await session?.release();
}

export const ortSessionOperations = {
  'ort.create': create,
  'ort.run': run,
  'ort.runLending': runLending,
  'ort.copy': copy,
  'ort.release': release,
};
