/**
 * The thread side of onnxruntime-web sessions run off the event loop (./wasm-thread.ts is the other side).
 * A WASM session computes on the thread that calls `run`, so the sessions live here, in a thread of their
 * own, and the server's thread only sends inputs and receives outputs. Registered as worker operations;
 * the sessions stay in this module between calls, so they are used from one dedicated thread only.
 */
import { readFileSync } from 'node:fs';
import type { OpContext } from '../workers/serve-operations.ts';
import { configureOrtWeb, type OrtWeb } from './backend.ts';
import { nbitsToInt8 } from './wasm-q4.ts';

/** A tensor as it crosses threads: its buffer moves (or is copied), the rest is plain data. */
export interface WireTensor {
  type: string;
  dims: number[];
  data: ArrayBufferView;
}

export interface OrtThreadInit {
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
  /** MatMulNBits weights run as int8 MatMulInteger in this session. */
  int8From4Bit: number;
}

type Session = Awaited<ReturnType<OrtWeb['InferenceSession']['create']>>;
type ExternalData = { path: string; data: string | Uint8Array }[];

let ort: Promise<OrtWeb> | undefined;
const sessions = new Map<number, Session>();
let nextId = 1;

const bytes = (v: string | Uint8Array) => (typeof v === 'string' ? new Uint8Array(readFileSync(v)) : v);

function runtime(init: OrtThreadInit): Promise<OrtWeb> {
  return ort ??= import('onnxruntime-web').then((m) => configureOrtWeb(m as unknown as OrtWeb, init));
}

async function create(
  [init, model, options]: [OrtThreadInit, string | Uint8Array, Record<string, unknown> & { externalData?: ExternalData }],
  _ctx?: OpContext,
): Promise<SessionInfo> {
  const o = await runtime(init);
  const externalData = options.externalData?.map((d) => ({ ...d, data: bytes(d.data) }));
  const graph = bytes(model);
  // 4-bit weights run as int8 here: ONNX Runtime's WASM build has no 4-bit kernel (./wasm-q4.ts)
  const int8 = nbitsToInt8(graph);
  const session = await o.InferenceSession.create(int8?.bytes ?? graph, { ...options, ...(externalData ? { externalData } : {}) } as never);
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

async function run([id, feeds]: [number, Record<string, WireTensor>]): Promise<Record<string, WireTensor>> {
  const session = sessions.get(id);
  if (!session) throw new Error(`WASM session ${id} is gone (its thread was restarted): load the model again`);
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

async function release([id]: [number]): Promise<void> {
  const session = sessions.get(id);
  sessions.delete(id);
  await session?.release();
}

export const wasmSessionOperations = {
  'ort.create': create,
  'ort.run': run,
  'ort.release': release,
};
