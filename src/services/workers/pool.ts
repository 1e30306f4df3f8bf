/**
 * A pool of worker threads for heavy work (docs/workers.md). Tasks queue in order; each runs in one
 * worker under a deadline and can be cancelled with an AbortSignal. A worker whose engine trapped, ran
 * out of memory or overran its deadline is discarded (terminated) and a fresh one starts on demand, so no
 * request sees another's damage. A worker whose memory grew past `recycleBytes` is retired after its task,
 * which gives that memory back. Idle workers stop after `idleMs`.
 */
import { cpuCount, startThread, type Thread, workerEntry } from '../../runtime/worker.ts';
import { ServiceError } from '../errors.ts';
import { limitExceeded, type Limits, limits as currentLimits } from '../limits.ts';
import { fromWire, type FromWorker, type ToWorker } from './protocol.ts';

export interface PoolOptions {
  /** worker threads (default: the core count) */
  size?: number;
  /** retire a worker after a task when its heap plus buffers exceed this (default 512 MiB) */
  recycleBytes?: number;
  /** heap ceiling per worker in MiB, where the runtime supports one (default 2048) */
  maxHeapMb?: number;
  /** stop a worker idle this long (default 60 s) */
  idleMs?: number;
  /** the entry module (default: the registry of operations in ./worker-entry.ts) */
  entry?: URL;
  /** the limits sent with each task (default: the process-wide limits) */
  limits?: () => Limits;
  /**
   * how many nice steps below the server the worker threads run (Linux; default 10; 0 = the same): with
   * more busy workers than cores, the event loop's thread then wins the CPU as soon as it has work
   * (docs/workers.md)
   */
  nice?: number;
}

export interface RunOptions {
  signal?: AbortSignal;
  /** wall-clock deadline of this task (default: the task deadline limit) */
  deadlineMs?: number;
  progress?(done: number | null, total?: number | null): void;
  /** buffers of `args` to move into the worker instead of copying (the caller must not use them after) */
  transfer?: Transferable[];
}

interface Job {
  id: number;
  op: string;
  args: unknown;
  opts: RunOptions;
  resolve(v: unknown): void;
  reject(e: unknown): void;
  onAbort?: () => void;
}

interface Slot {
  thread: Thread;
  ready: Promise<void>;
  job: Job | null;
  timer?: ReturnType<typeof setTimeout>;
  idleTimer?: ReturnType<typeof setTimeout>;
  dead: boolean;
  tasks: number;
  /** the entry module loaded and said so */
  started: boolean;
}

export interface PoolStats {
  size: number;
  busy: number;
  queued: number;
  started: number;
  discarded: number;
  recycled: number;
}

let nextId = 1;

export class WorkerPool {
  readonly size: number;
  private readonly opts: Required<Omit<PoolOptions, 'entry' | 'size'>> & { entry?: URL };
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private closed = false;
  readonly stats: PoolStats;

  constructor(opts: PoolOptions = {}) {
    this.size = Math.max(1, opts.size || cpuCount());
    this.opts = {
      recycleBytes: opts.recycleBytes ?? 512 * 1024 * 1024,
      maxHeapMb: opts.maxHeapMb ?? 2048,
      idleMs: opts.idleMs ?? 60_000,
      entry: opts.entry,
      limits: opts.limits ?? currentLimits,
      nice: opts.nice ?? 10,
    };
    this.stats = { size: this.size, busy: 0, queued: 0, started: 0, discarded: 0, recycled: 0 };
  }

  /** Runs a registered operation in a worker; resolves with its result or rejects with its error. */
  run(op: string, args: unknown, opts: RunOptions = {}): Promise<unknown> {
    if (this.closed) {
      return Promise.reject(
        new ServiceError(503, 'service_unavailable', 'the server is shutting down', { headers: { 'Retry-After': '5' } }),
      );
    }
    opts.signal?.throwIfAborted();
    return new Promise((resolve, reject) => {
      const job: Job = { id: nextId++, op, args, opts, resolve, reject };
      if (opts.signal) {
        job.onAbort = () => this.abort(job);
        opts.signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.stats.queued = this.queue.length;
      this.pump();
    });
  }

  /** Terminates every worker; queued tasks are refused. */
  async close(): Promise<void> {
    this.closed = true;
    for (const j of this.queue.splice(0)) {
      this.finish(
        j,
        false,
        new ServiceError(503, 'service_unavailable', 'the server is shutting down', { headers: { 'Retry-After': '5' } }),
      );
    }
    for (const s of [...this.slots]) {
      if (s.job) {
        this.finish(
          s.job,
          false,
          new ServiceError(503, 'service_unavailable', 'the server is shutting down', { headers: { 'Retry-After': '5' } }),
        );
      }
      this.discard(s, false);
    }
  }

  private pump(): void {
    while (this.queue.length) {
      let slot = this.slots.find((s) => !s.job && !s.dead);
      if (!slot) {
        if (this.slots.length >= this.size) return;
        slot = this.spawn();
      }
      const job = this.queue.shift()!;
      this.stats.queued = this.queue.length;
      this.dispatch(slot, job);
    }
  }

  private spawn(): Slot {
    const threadP = startThread(this.opts.entry ?? workerEntry(), { maxHeapMb: this.opts.maxHeapMb, name: 'svc-worker' });
    const slot: Slot = {
      thread: undefined as unknown as Thread,
      ready: undefined as unknown as Promise<void>,
      job: null,
      dead: false,
      tasks: 0,
      started: false,
    };
    slot.ready = threadP.then((thread) => {
      slot.thread = thread;
      thread.keepAlive(false);
      thread.onMessage((m) => this.onMessage(slot, m as FromWorker));
      thread.onExit((err) => this.onExit(slot, err));
      if (this.opts.nice > 0) thread.post({ type: 'setup', nice: this.opts.nice } satisfies ToWorker);
    });
    slot.ready.catch((e) => this.onExit(slot, e instanceof Error ? e : new Error(String(e))));
    this.slots.push(slot);
    this.stats.started++;
    return slot;
  }

  private dispatch(slot: Slot, job: Job): void {
    slot.job = job;
    clearTimeout(slot.idleTimer);
    this.stats.busy = this.slots.filter((s) => s.job).length;
    const deadline = job.opts.deadlineMs ?? this.opts.limits().taskDeadlineMs;
    slot.timer = setTimeout(() => {
      if (slot.job !== job) return;
      this.finish(
        job,
        false,
        limitExceeded('taskDeadlineMs', 422, 'deadline_exceeded', `the ${job.op} task ran past its deadline`, this.opts.limits()),
      );
      this.discard(slot, true);
    }, deadline);
    void slot.ready.then(() => {
      if (slot.job !== job || slot.dead) return;
      slot.thread.keepAlive(true);
      const msg: ToWorker = { type: 'run', id: job.id, op: job.op, args: job.args, limits: this.opts.limits() };
      try {
        slot.thread.post(msg, job.opts.transfer);
      } catch (e) {
        // not cloneable (a function or a signal inside args): a programming error, reported as such
        this.finish(job, false, e);
        this.release(slot);
      }
    });
  }

  private onMessage(slot: Slot, m: FromWorker): void {
    const job = slot.job;
    if (m.type === 'ready') return void (slot.started = true);
    if (!job || m.id !== job.id) return;
    if (m.type === 'progress') return void job.opts.progress?.(m.done, m.total);
    slot.tasks++;
    if (m.type === 'done') this.finish(job, true, m.value);
    else this.finish(job, false, m.poisoned ? engineFailure(job.op, m.error.message) : fromWire(m.error));
    if (m.type === 'failed' && m.poisoned) return this.discard(slot, true);
    if (m.memory > this.opts.recycleBytes) {
      this.stats.recycled++;
      return this.discard(slot, false);
    }
    this.release(slot);
  }

  private onExit(slot: Slot, err: Error | null): void {
    if (slot.dead) return;
    slot.dead = true;
    clearTimeout(slot.timer);
    clearTimeout(slot.idleTimer);
    this.remove(slot);
    if (slot.job) {
      // A worker that never loaded its entry is the server's fault, not the input's.
      if (!slot.started) this.finish(slot.job, false, new Error(`a worker thread failed to start: ${err?.message ?? 'it exited'}`));
      const oom = err &&
        /out of memory|ERR_WORKER_OUT_OF_MEMORY|allocation failed/i.test(`${(err as { code?: string }).code ?? ''} ${err.message}`);
      this.finish(
        slot.job,
        false,
        oom
          ? new ServiceError(
            422,
            'memory_limit_exceeded',
            `the ${slot.job.op} task ran out of memory on this input (worker heap limit ${this.opts.maxHeapMb} MiB, setting --worker-heap-mb)`,
            { fields: { limit: 'worker-heap-mb' } },
          )
          : engineFailure(slot.job.op, err?.message ?? 'the worker stopped'),
      );
      this.stats.discarded++;
    }
    this.pump();
  }

  private release(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.job = null;
    slot.thread?.keepAlive(false);
    this.stats.busy = this.slots.filter((s) => s.job).length;
    slot.idleTimer = setTimeout(() => {
      if (!slot.job) this.discard(slot, false);
    }, this.opts.idleMs);
    (slot.idleTimer as { unref?(): void }).unref?.();
    this.pump();
  }

  /** Throws a worker away (its memory goes with it); the queue moves on to a fresh one. */
  private discard(slot: Slot, damaged: boolean): void {
    if (slot.dead) return;
    slot.dead = true;
    clearTimeout(slot.timer);
    clearTimeout(slot.idleTimer);
    if (damaged) this.stats.discarded++;
    this.remove(slot);
    void slot.ready.then(() => slot.thread.terminate(), () => {});
    this.pump();
  }

  private remove(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    this.stats.busy = this.slots.filter((s) => s.job).length;
  }

  private abort(job: Job): void {
    const reason = job.opts.signal?.reason ?? new DOMException('aborted', 'AbortError');
    const q = this.queue.indexOf(job);
    if (q >= 0) {
      this.queue.splice(q, 1);
      this.stats.queued = this.queue.length;
      return this.finish(job, false, reason);
    }
    const slot = this.slots.find((s) => s.job === job);
    if (!slot) return;
    // Synchronous WASM cannot be interrupted: the worker goes, and with it whatever it was doing.
    this.finish(job, false, reason);
    this.discard(slot, false);
  }

  private finish(job: Job, ok: boolean, value: unknown): void {
    if (job.onAbort) job.opts.signal?.removeEventListener('abort', job.onAbort);
    job.onAbort = undefined;
    const settle = ok ? job.resolve : job.reject;
    job.resolve = job.reject = () => {};
    settle(value);
  }
}

/** An engine that trapped on this input: its worker is gone; the caller learns it was the input. */
const engineFailure = (op: string, detail: string) =>
  new ServiceError(422, 'engine_failed', `the ${op} engine failed on this input and was restarted (${detail.slice(0, 200)})`);
