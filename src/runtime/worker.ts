/**
 * Threads for heavy work, the same shape on every runtime. Node 20 has no global Web `Worker`, so it gets
 * `worker_threads` (which also gives a per-worker heap limit); Deno and Bun get their Web `Worker`.
 * Both ends speak structured-clone messages; a worker that dies (trap, out of memory, terminate) reports
 * once through `onExit`.
 */
import { availableParallelism, getPriority, platform, setPriority } from 'node:os';
import process from 'node:process';

const g = globalThis as {
  Deno?: unknown;
  Bun?: unknown;
  Worker?: new (url: string | URL, opts?: Record<string, unknown>) => WebWorker;
  self?: { postMessage(m: unknown, t?: Transferable[]): void; onmessage: ((e: { data: unknown }) => void) | null; close?(): void };
  /** Set by scripts/build.mjs: where the bundled worker entry lies, relative to the bundle. */
  __SVC_WORKER_ENTRY__?: string;
};

interface WebWorker {
  postMessage(m: unknown, transfer?: Transferable[]): void;
  terminate(): void;
  onmessage: ((e: { data: unknown }) => void) | null;
  onerror: ((e: { message?: string; error?: unknown; preventDefault?(): void }) => void) | null;
  ref?(): void;
  unref?(): void;
  onmessageerror?: ((e: unknown) => void) | null;
}

declare const __SVC_WORKER_ENTRY__: string | undefined;

export interface ThreadOptions {
  /** Heap ceiling of the thread in MiB (Node only; Deno and Bun have no per-worker limit). */
  maxHeapMb?: number;
  name?: string;
}

export interface Thread {
  post(message: unknown, transfer?: Transferable[]): void;
  /** Stops the thread at once, whatever it is doing; onExit fires. */
  terminate(): void;
  onMessage(cb: (message: unknown) => void): void;
  /** Whether the thread keeps the process alive (busy: yes; idle: no). */
  keepAlive(on: boolean): void;
  /** Fires once when the thread is gone; `error` is set when it died rather than being terminated. */
  onExit(cb: (error: Error | null) => void): void;
}

export const cpuCount = (): number => Math.max(1, availableParallelism());

/**
 * The worker entry: the TypeScript source when running from source (tsx, deno run, bun run, and the Bun
 * single binary, which embeds it as an extra entry point), the bundled file next to dist/main.mjs otherwise.
 */
export function workerEntry(): URL {
  const bundled = typeof __SVC_WORKER_ENTRY__ === 'string' ? __SVC_WORKER_ENTRY__ : g.__SVC_WORKER_ENTRY__;
  if (bundled) return new URL(bundled, import.meta.url);
  // Bun's single binary: every module is bundled into the main entry at the root of its embedded files,
  // and the worker entry (a second entry point of the build) sits at its source path below that root.
  if (import.meta.url.includes('$bunfs')) return new URL('./services/workers/worker-entry.ts', import.meta.url);
  return new URL('../services/workers/worker-entry.ts', import.meta.url);
}

export async function startThread(entry: URL, opts: ThreadOptions = {}): Promise<Thread> {
  return g.Deno || g.Bun ? webThread(entry, opts) : nodeThread(entry, opts);
}

async function nodeThread(entry: URL, opts: ThreadOptions): Promise<Thread> {
  const { Worker } = await import('node:worker_threads');
  // Running from TypeScript sources (tests, `npm run dev`): the worker registers the same loader first.
  const source = entry.pathname.endsWith('.ts');
  const boot = source
    ? `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${
      JSON.stringify(entry.href)
    }); })`
    : entry;
  const w = new Worker(boot, {
    eval: source,
    name: opts.name,
    resourceLimits: opts.maxHeapMb
      ? { maxOldGenerationSizeMb: opts.maxHeapMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(16, opts.maxHeapMb >> 4)) }
      : undefined,
    stdout: false,
    stderr: false,
  });
  let exitCb: (e: Error | null) => void = () => {};
  let failure: Error | null = null;
  let gone = false;
  const exit = (e: Error | null) => {
    if (gone) return;
    gone = true;
    exitCb(e);
  };
  w.on('error', (e) => (failure = e instanceof Error ? e : new Error(String(e))));
  w.on('exit', () => exit(failure));
  return {
    post: (m, t) => w.postMessage(m, t as never),
    terminate: () => void w.terminate(),
    keepAlive: (on) => (on ? w.ref() : w.unref()),
    onMessage: (cb) => void w.on('message', cb),
    onExit: (cb) => (exitCb = cb),
  };
}

function webThread(entry: URL, opts: ThreadOptions): Thread {
  const W = g.Worker;
  if (!W) throw new Error('this runtime has no Web Worker');
  // Bun's single binary finds an embedded entry point by the path it was built from, relative to the root.
  const w = new W(entry.href, { type: 'module', name: opts.name });
  let exitCb: (e: Error | null) => void = () => {};
  let gone = false;
  const exit = (e: Error | null) => {
    if (gone) return;
    gone = true;
    exitCb(e);
  };
  w.onerror = (e) => {
    e.preventDefault?.();
    exit(e.error instanceof Error ? e.error : new Error(e.message ?? 'worker failed'));
    w.terminate();
  };
  return {
    post: (m, t) => w.postMessage(m, t),
    terminate: () => {
      w.terminate();
      exit(null);
    },
    keepAlive: (on) => (on ? w.ref?.() : w.unref?.()),
    onMessage: (cb) => (w.onmessage = (e) => cb(e.data)),
    onExit: (cb) => (exitCb = cb),
  };
}

/** Inside a worker: the channel to the thread that started it. */
export async function parentChannel(): Promise<
  { post(message: unknown, transfer?: Transferable[]): void; onMessage(cb: (message: unknown) => void): void }
> {
  if (!g.Deno && !g.Bun) {
    const { parentPort } = await import('node:worker_threads');
    if (!parentPort) throw new Error('not running in a worker thread');
    return { post: (m, t) => parentPort.postMessage(m, t as never), onMessage: (cb) => void parentPort.on('message', cb) };
  }
  const self = g.self;
  if (!self) throw new Error('not running in a worker');
  return { post: (m, t) => self.postMessage(m, t), onMessage: (cb) => (self.onmessage = (e) => cb(e.data)) };
}

// loaded once: a dynamic import resolves the module again on every call (costly under a loader hook)
let v8: typeof import('node:v8') | undefined;

/**
 * Bytes of the calling thread's JS heap plus the buffers it holds (WASM memories included on V8). On Bun,
 * `process.memoryUsage()` gives the same two figures as `v8.getHeapStatistics()` (the calling thread's), which
 * there walks the heap: ~8 ms a call with an inference thread's heap, after every operation a thread runs.
 */
export async function threadMemoryBytes(): Promise<number> {
  if (g.Deno) {
    const m = (g.Deno as { memoryUsage(): { heapUsed: number; external: number } }).memoryUsage();
    return m.heapUsed + m.external;
  }
  if (g.Bun) {
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  }
  const h = (v8 ??= await import('node:v8')).getHeapStatistics();
  return h.used_heap_size + h.external_memory;
}

/**
 * Lowers the scheduling priority of the calling thread only, by `increment` nice steps (as `nice -n`). On
 * Linux a thread is its own scheduling entity, so `setpriority` on "process 0" from inside a worker thread
 * changes that thread alone (the same call on macOS or Windows would change the whole process: nothing is
 * done there). Node, Deno and Bun all serve `node:os`. Returns whether it took effect.
 */
export function lowerThreadPriority(increment: number): boolean {
  if (increment <= 0 || platform() !== 'linux') return false;
  try {
    setPriority(0, Math.min(19, getPriority(0) + increment));
    return true;
  } catch {
    return false; // a sandbox that forbids it: the thread keeps the server's priority
  }
}
