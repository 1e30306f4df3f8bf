/**
 * onnxruntime-web with its sessions off the event loop. A WASM session computes on the thread that calls
 * `run` (its own intra-op threads only help inside one kernel), so on the server's thread a decode step
 * would block every route for its whole duration. The ONNX Runtime module handed to transformers.js here
 * is the real one (its Tensor class, its env) with `InferenceSession.create` replaced: the session is
 * created in one dedicated thread (./wasm-sessions.ts) and each `run` sends the input tensors there and
 * receives the outputs, their buffers moved rather than copied.
 *
 * One thread holds every session: ONNX Runtime's WASM instance is process-wide state, and one instance
 * keeps weights in one memory. Calls are answered in order; a run waits for the one before it, as it
 * would on the server's thread. The thread keeps the process alive only while a call is in flight.
 */
import { startThread, type Thread, workerEntry } from '../../runtime/worker.ts';
import { limits } from '../limits.ts';
import { fromWire, type FromWorker, type ToWorker } from '../workers/protocol.ts';
import type { OrtWeb } from './backend.ts';
import type { OrtThreadInit, SessionInfo, WireTensor } from './wasm-sessions.ts';

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

let thread: Promise<Thread> | undefined;
/** Which thread a session belongs to: a restarted thread holds none of the earlier sessions. */
let generation = 0;
const pending = new Map<number, Pending>();
let nextCall = 1;

function start(): Promise<Thread> {
  generation++;
  const t = startThread(workerEntry(), { name: 'svc-wasm-inference' }).then((th) => {
    let readyResolve!: () => void;
    const ready = new Promise<void>((r) => (readyResolve = r));
    th.onMessage((raw) => {
      const m = raw as FromWorker;
      if (m.type === 'ready') return readyResolve();
      if (m.type === 'progress') return;
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (!pending.size) th.keepAlive(false);
      if (m.type === 'done') p.resolve(m.value);
      else p.reject(fromWire(m.error));
    });
    th.onExit((error) => {
      // Every session lived in that thread: calls in flight fail, later ones start a fresh thread
      // (whose sessions must be created again).
      thread = undefined;
      const e = new Error(`the WASM inference thread stopped${error ? `: ${error.message}` : ''}`);
      for (const p of pending.values()) p.reject(e);
      pending.clear();
    });
    th.keepAlive(true); // until it has started: the caller is waiting for it
    return ready.then(() => {
      if (!pending.size) th.keepAlive(false);
      return th;
    });
  });
  t.catch(() => (thread = undefined));
  return t;
}

function call<T>(op: string, args: unknown, transfer: Transferable[] = []): Promise<T> {
  thread ??= start();
  return thread.then((th) =>
    new Promise<T>((resolve, reject) => {
      const id = nextCall++;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      th.keepAlive(true);
      const msg: ToWorker = { type: 'run', id, op, args, limits: limits() };
      try {
        th.post(msg, transfer);
      } catch (e) {
        pending.delete(id);
        reject(e);
      }
    })
  );
}

/** A typed array that owns its whole buffer, so that buffer can be moved without taking neighbours along. */
function own(data: ArrayBufferView): ArrayBufferView {
  if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer) return data;
  return (data as unknown as { slice(): ArrayBufferView }).slice();
}

type OrtTensor = InstanceType<OrtWeb['Tensor']>;

/** A session whose weights and compute live in the inference thread. */
class ThreadSession {
  readonly inputNames: string[];
  readonly outputNames: string[];
  readonly inputMetadata: unknown[];
  readonly outputMetadata: unknown[];
  private released = false;
  private readonly generation = generation;

  constructor(private readonly ort: OrtWeb, private readonly info: SessionInfo) {
    this.inputNames = info.inputNames;
    this.outputNames = info.outputNames;
    this.inputMetadata = info.inputMetadata;
    this.outputMetadata = info.outputMetadata;
  }

  /** 4-bit weights this session runs as int8 (./wasm-q4.ts). */
  get int8From4Bit(): number {
    return this.info.int8From4Bit;
  }

  async run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>> {
    if (this.generation !== generation || !thread) throw new Error('the WASM inference thread stopped; load the model again');
    const wire: Record<string, WireTensor> = {};
    const transfer: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) {
      // a copy moves to the thread: the caller keeps its tensors (the next step may read them again)
      const copy = (t.data as unknown as { slice(): ArrayBufferView }).slice();
      wire[name] = { type: t.type, dims: [...t.dims], data: copy };
      transfer.push(copy.buffer as ArrayBuffer);
    }
    const out = await call<Record<string, WireTensor>>('ort.run', [this.info.id, wire], transfer);
    const result: Record<string, OrtTensor> = {};
    for (const [name, t] of Object.entries(out)) result[name] = new this.ort.Tensor(t.type as never, t.data as never, t.dims);
    return result;
  }

  async release(): Promise<void> {
    if (this.released || this.generation !== generation || !thread) return;
    this.released = true;
    await call('ort.release', [this.info.id]).catch(() => {});
  }

  startProfiling(): void {}
  endProfiling(): void {}
}

/** `ort` with sessions created and run in the inference thread (see the module comment). */
export function offThreadOrt(ort: OrtWeb, init: OrtThreadInit): OrtWeb {
  const create = async (model: string | Uint8Array | ArrayBuffer, options: Record<string, unknown> = {}) => {
    const m = typeof model === 'string' ? model : own(model instanceof ArrayBuffer ? new Uint8Array(model) : model) as Uint8Array;
    const info = await call<SessionInfo>('ort.create', [init, m, options]);
    return new ThreadSession(ort, info);
  };
  return { ...ort, InferenceSession: { ...ort.InferenceSession, create } } as unknown as OrtWeb;
}
