/**
 * ONNX Runtime sessions off the event loop. A session computes on the thread that calls `run`: a WASM
 * session always (its own intra-op threads only help inside one kernel), and onnxruntime-node's `run` too,
 * synchronously, on the server's thread, whatever its intra-op threads. So on the server's thread a decode
 * step would block every route for its whole duration, and a long prompt's prefill for seconds. Here the
 * session is created in one dedicated thread (./ort-sessions.ts) and each `run` sends the input tensors
 * there and receives the outputs, their buffers moved rather than copied. The ONNX Runtime transformers.js
 * uses stays the real one (its Tensor class, its env), with only `InferenceSession.create` replaced.
 *
 * One thread holds every session: ONNX Runtime's WASM instance is process-wide state, and one instance
 * keeps weights in one memory; native sessions share it as they shared the server's thread before. (On WASM,
 * decoders cut for svc's kernels have a second thread: see `Lane`.) Calls
 * are answered in order; a run waits for the one before it, as it would on the server's thread. The thread
 * keeps the process alive only while a call is in flight, and stops once its last session is released: a
 * thread that has run a WebGPU session keeps Deno's process alive even when idle.
 */
import { wasmKernelsUnavailable } from '../../runtime/wasm-kernels.ts';
import { startThread, type Thread, workerEntry } from '../../runtime/worker.ts';
import { limits } from '../limits.ts';
import { fromWire, type FromWorker, type ToWorker } from '../workers/protocol.ts';
import type { OrtWeb } from './backend.ts';
import { DECODER_OPTION, withoutDecoderOption } from './decoder-graph.ts';
import type {
  DecodedHeld,
  DecodePlan,
  GpuTensor,
  GraphEditCounts,
  HeldAppend,
  HeldCopy,
  HeldView,
  OrtThreadInit,
  SessionInfo,
  WireTensor,
} from './ort-sessions.ts';

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

let nextCall = 1;

/**
 * A thread that holds sessions, started on the first call and stopped when its last session is released. Two
 * kinds: the inference thread, and on onnxruntime-web a second one for decoders cut for svc's WASM kernels,
 * whose onnxruntime-web has one thread. onnxruntime-web's threads are one pool for all its sessions, and after a
 * run they spin for the next for about 10 ms (measured: a run every 20 ms kept 1.66 of 2 cores busy, with or
 * without `intra_op.allow_spinning` off, which its global pool does not read). A decode step runs a few small
 * stages on it between the kernels' products, so that spinning thread took a core from the kernels' own
 * workers for the whole step: there, the threads go to svc's kernels (./split-session.ts).
 */
class Lane {
  thread: Promise<Thread> | undefined;
  /** Which thread a session belongs to: a restarted thread holds none of the earlier sessions. */
  generation = 0;
  readonly pending = new Map<number, Pending>();
  /** Sessions of the current thread not yet released. */
  sessionsAlive = 0;

  constructor(readonly name: string) {}

  private start(): Promise<Thread> {
    this.generation++;
    this.sessionsAlive = 0;
    const pending = this.pending;
    const t = startThread(workerEntry(), { name: this.name }).then((th) => {
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
        if (this.thread === t) this.thread = undefined;
        const e = new Error(`the inference thread stopped${error ? `: ${error.message}` : ''}`);
        for (const p of pending.values()) p.reject(e);
        pending.clear();
      });
      th.keepAlive(true); // until it has started: the caller is waiting for it
      return ready.then(() => {
        if (!pending.size) th.keepAlive(false);
        return th;
      });
    });
    t.catch(() => (this.thread = undefined));
    this.thread = t;
    return t;
  }

  call<T>(op: string, args: unknown, transfer: Transferable[] = []): Promise<T> {
    return (this.thread ?? this.start()).then((th) =>
      new Promise<T>((resolve, reject) => {
        const id = nextCall++;
        this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        th.keepAlive(true);
        const msg: ToWorker = { type: 'run', id, op, args, limits: limits() };
        try {
          th.post(msg, transfer);
        } catch (e) {
          this.pending.delete(id);
          reject(e);
        }
      })
    );
  }

  /** After a session's release: with none left, the thread goes (the next session starts a fresh one). */
  released(generation: number): void {
    if (generation !== this.generation) return;
    this.sessionsAlive--;
    this.stopIfIdle();
  }

  stopIfIdle(): void {
    if (this.sessionsAlive || this.pending.size || !this.thread) return;
    const th = this.thread;
    this.thread = undefined;
    th.then((t) => t.terminate());
  }
}

const inference = new Lane('svc-inference');
const ownKernels = new Lane('svc-inference-kernels');

/** A typed array that owns its whole buffer, so that buffer can be moved without taking neighbours along. */
function own(data: ArrayBufferView): ArrayBufferView {
  if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer) return data;
  return (data as unknown as { slice(): ArrayBufferView }).slice();
}

type OrtTensor = InstanceType<OrtWeb['Tensor']>;

/** A copy of a tensor that moves to the thread: the caller keeps its own (the next step may read it again). */
function copied(t: OrtTensor, transfer: ArrayBuffer[]): WireTensor {
  const data = (t.data as unknown as { slice(): ArrayBufferView }).slice();
  transfer.push(data.buffer as ArrayBuffer);
  return { type: t.type, dims: [...t.dims], data };
}

/** What a GPU tensor made here stands for: an output left on the GPU in the inference thread (`GpuTensor`). */
interface OnGpu {
  readonly svcGpu: number;
}

/**
 * Stand-ins collected without being disposed (a generation that threw before freeing its cache): what they
 * stood for is freed in the thread then, not when the session goes.
 */
const unclaimed = new FinalizationRegistry<() => void>((drop) => drop());

/** A feed as it goes to the thread: a GPU tensor by its id, any other copied. */
function wired(t: OrtTensor, transfer: ArrayBuffer[]): WireTensor | GpuTensor {
  if (t.location !== 'gpu-buffer') return copied(t, transfer);
  const gpu = (t.gpuBuffer as unknown as Partial<OnGpu>)?.svcGpu;
  if (gpu === undefined) throw new Error('a GPU tensor not made by an inference-thread session cannot be fed to one');
  return { type: t.type, dims: [...t.dims], gpu };
}

/** A float32 buffer kept in the inference thread between calls (./ort-sessions.ts): its id and length. */
export interface HeldArena {
  readonly id: number;
  readonly length: number;
}

/** A held buffer in shared memory: its contents are readable here. */
export interface SharedArena extends HeldArena {
  readonly data: Float32Array;
}

let nextHeld = 1;

/** A session whose weights and compute live in the inference thread. */
class ThreadSession {
  readonly inputNames: string[];
  readonly outputNames: string[];
  readonly inputMetadata: unknown[];
  readonly outputMetadata: unknown[];
  /** What the graph edits made where the session was created did (./ort-sessions.ts). */
  readonly edits: GraphEditCounts;
  private released = false;
  private readonly generation: number;

  constructor(private readonly ort: OrtWeb, private readonly info: SessionInfo, private readonly lane: Lane) {
    this.inputNames = info.inputNames;
    this.outputNames = info.outputNames;
    this.inputMetadata = info.inputMetadata;
    this.outputMetadata = info.outputMetadata;
    this.edits = info.edits;
    this.generation = lane.generation;
    lane.sessionsAlive++;
  }

  /** The lane's thread is still the one that holds this session. */
  private current(): boolean {
    return this.generation === this.lane.generation && !!this.lane.thread;
  }

  private alive(): void {
    if (!this.current()) throw new Error('the inference thread stopped; load the model again');
  }

  private call<T>(op: string, args: unknown, transfer?: Transferable[]): Promise<T> {
    return this.lane.call<T>(op, args, transfer);
  }

  /** The name of the thread that holds it. */
  get thread(): string {
    return this.lane.name;
  }

  async run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>> {
    this.alive();
    const wire: Record<string, WireTensor | GpuTensor> = {};
    const transfer: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) wire[name] = wired(t, transfer);
    return this.tensors(await this.call<Record<string, WireTensor | GpuTensor>>('ort.run', [this.info.id, wire], transfer));
  }

  private tensors(out: Record<string, WireTensor | GpuTensor>): Record<string, OrtTensor> {
    const result: Record<string, OrtTensor> = {};
    for (const [name, t] of Object.entries(out)) {
      result[name] = 'gpu' in t ? this.onGpu(t) : new this.ort.Tensor(t.type as never, t.data as never, t.dims);
    }
    return result;
  }

  /** A stand-in for an output left on the GPU in the thread: fed back by id, freed there. */
  private onGpu(t: GpuTensor): OrtTensor {
    const handle: OnGpu = { svcGpu: t.gpu };
    const drop = () => {
      if (this.current()) this.call('ort.dropGpu', [[t.gpu]]).catch(() => {});
    };
    const tensor = this.ort.Tensor.fromGpuBuffer(handle as never, {
      dataType: t.type as never,
      dims: t.dims,
      // onnxruntime-node 1.30 aborts the whole process when one of its GPU tensors is read (`getData`:
      // "terminate called after throwing"), and nothing here needs to read one
      download: () => Promise.reject(new Error('reading a GPU tensor back to the CPU is not supported on onnxruntime-node')),
      // no answer awaited: later calls are handled after it; a restarted thread holds none of them
      dispose: () => {
        unclaimed.unregister(handle);
        drop();
      },
    });
    unclaimed.register(tensor, drop, handle);
    return tensor;
  }

  /**
   * New zeroed float32 buffers of these lengths, kept in the thread for this session's calls until
   * dropped (or the session released). A decode loop keeps its KV cache there: its steps then move no
   * large buffer between threads (see ./ort-sessions.ts for why that matters).
   */
  async hold(lengths: number[]): Promise<HeldArena[]> {
    this.alive();
    const arenas = lengths.map((length) => ({ id: nextHeld++, length }));
    await this.call('ort.hold', [this.info.id, arenas.map((a) => a.id), lengths]);
    return arenas;
  }

  /**
   * A held buffer this thread reads too (shared memory): runs write into it (`fetches` of `runHeld`) and
   * its `data` shows the result once the run resolves, without a buffer crossing threads per run.
   */
  async share(length: number): Promise<SharedArena> {
    this.alive();
    const arena = { id: nextHeld++, length, data: new Float32Array(new SharedArrayBuffer(length * 4)) };
    await this.call('ort.share', [this.info.id, arena.id, arena.data.buffer]);
    return arena;
  }

  /** Frees held buffers (no answer awaited: later calls are handled after it). */
  drop(arenas: HeldArena[]): void {
    if (!arenas.length || !this.current()) return;
    this.call('ort.drop', [arenas.map((a) => a.id)]).catch(() => {});
  }

  /**
   * A run whose float32 feeds may be views of held buffers, whose `fetches` (outputs) are written into held
   * buffers and whose `appends` are written into held caches at given positions (./ort-sessions.ts). The
   * `returned` outputs (by default all others) come back as from `run`.
   */
  async runHeld(
    feeds: Record<string, OrtTensor | HeldView>,
    fetches: Record<string, HeldView>,
    appends?: Record<string, HeldAppend>,
    returned?: string[],
  ): Promise<Record<string, OrtTensor>> {
    this.alive();
    const wire: Record<string, WireTensor | HeldView> = {};
    const transfer: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) wire[name] = 'held' in t ? t : copied(t, transfer);
    const out = await this.call<Record<string, WireTensor>>('ort.runHeld', [this.info.id, wire, fetches, appends, returned], transfer);
    return this.tensors(out);
  }

  /** Decode steps back to back in the thread, on a cache held in place (./ort-sessions.ts `decodeHeld`). */
  async decodeHeld(plan: DecodePlan): Promise<DecodedHeld> {
    this.alive();
    return await this.call<DecodedHeld>('ort.decodeHeld', [this.info.id, plan]);
  }

  /** Copies between held buffers, done in the thread (a repack moves tens of MB for a long context). */
  async copyHeld(moves: HeldCopy[]): Promise<void> {
    this.alive();
    if (moves.length) await this.call('ort.copyHeld', [moves]);
  }

  async release(): Promise<void> {
    if (this.released || !this.current()) return;
    this.released = true;
    await this.call('ort.release', [this.info.id]).catch(() => {});
    this.lane.released(this.generation);
  }

  startProfiling(): void {}
  endProfiling(): void {}
}

/** Marks an `InferenceSession` whose `create` was already replaced. */
const offThread = Symbol('svc.offThread');

type Create = (model: string | Uint8Array | ArrayBuffer, options?: Record<string, unknown>) => Promise<unknown>;

/**
 * `create` for sessions in the inference thread: the model bytes (or path) move there once. On onnxruntime-web a
 * decoder goes first to the thread for decoders on svc's WASM kernels (see `Lane`), which makes it only if it
 * cuts it for them; else (or where the kernels are off) to the inference thread.
 */
const threadCreate = (ort: OrtWeb, init: OrtThreadInit): Create => async (model, options = {}) => {
  const m = typeof model === 'string' ? model : own(model instanceof ArrayBuffer ? new Uint8Array(model) : model) as Uint8Array;
  if (init.runtime === 'onnxruntime-web' && DECODER_OPTION in options && !wasmKernelsUnavailable()) {
    const info = await ownKernels.call<SessionInfo | null>('ort.create', [{ ...init, threads: 1, splitOnly: true }, m, options]);
    if (info) return new ThreadSession(ort, info, ownKernels);
    ownKernels.stopIfIdle(); // started for nothing: stopped again if it holds no session
  }
  const info = await inference.call<SessionInfo>('ort.create', [init, m, options]);
  return new ThreadSession(ort, info, inference);
};

/** `ort` (onnxruntime-web) with sessions created and run in the inference thread (see the module comment). */
export function offThreadOrt(ort: OrtWeb, init: Omit<OrtThreadInit, 'runtime'>): OrtWeb {
  const create = threadCreate(ort, { ...init, runtime: 'onnxruntime-web' });
  return { ...ort, InferenceSession: { ...ort.InferenceSession, create } } as unknown as OrtWeb;
}

/** The execution providers session options name (ONNX Runtime's default: the CPU). */
export function providers(options: Record<string, unknown>): string[] {
  return ((options.executionProviders ?? ['cpu']) as (string | { name?: string })[]).map((
    e,
  ) => (typeof e === 'string' ? e : String(e?.name)));
}

/**
 * onnxruntime-node's sessions created and run in the inference thread: CPU sessions, and WebGPU sessions (whose
 * `run` holds its thread for the whole step as a CPU one does), their GPU outputs kept there (`GpuTensor`).
 * transformers.js holds the package's `InferenceSession` itself, so its `create` is replaced in place. CUDA
 * sessions are created as before, on the server's thread (not measured here: no CUDA build to run).
 */
export function offThreadNativeSessions(ort: OrtWeb): void {
  const S = ort.InferenceSession as unknown as { create: Create; [offThread]?: true };
  if (S[offThread]) return;
  const inProcess = S.create.bind(S);
  const create = threadCreate(ort, { runtime: 'onnxruntime-node', threads: 0 });
  S.create = (model, options = {}) => {
    const eps = providers(options);
    if (eps.every((e) => e === 'cpu')) return create(model, options);
    // a GPU session runs transformers.js' own decode loop: no rewrite for the batch decoder
    if (eps.every((e) => e === 'cpu' || e === 'webgpu')) return create(model, withoutDecoderOption(options));
    return inProcess(model, withoutDecoderOption(options));
  };
  S[offThread] = true;
}
