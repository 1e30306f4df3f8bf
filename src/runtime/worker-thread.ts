/**
 * One-shot worker threads: the code runs in its own thread and isolate, and a hang or a trap is ended by
 * terminating the thread, which takes its memory with it. `node:worker_threads` is served by Node, Bun
 * and Deno alike.
 */
import { Worker } from 'node:worker_threads';

export class WorkerTimeout extends Error {}

/**
 * Runs an ES module source `code` in a fresh worker. The module reads `workerData` and answers with one
 * `parentPort.postMessage({ ok, value | error })`. The worker is terminated when it answers, when it
 * runs past `timeoutMs`, or when `signal` aborts.
 */
export function runInWorker<T>(
  code: string,
  data: unknown,
  opts: { timeoutMs: number; signal?: AbortSignal; transfer?: ArrayBuffer[] },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    opts.signal?.throwIfAborted();
    const url = `data:text/javascript,${encodeURIComponent(code)}`;
    const worker = new Worker(
      new URL(url),
      { workerData: data, transferList: opts.transfer, stdout: true, stderr: true } as ConstructorParameters<typeof Worker>[1],
    );
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(() => finish(() => reject(new WorkerTimeout(`worker ran past ${opts.timeoutMs} ms`))), opts.timeoutMs);
    const onAbort = () => finish(() => reject(opts.signal?.reason ?? new Error('aborted')));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on(
      'message',
      (m: { ok: boolean; value?: T; error?: string }) => finish(() => (m.ok ? resolve(m.value as T) : reject(new Error(m.error)))),
    );
    worker.on('error', (e) => finish(() => reject(e)));
    worker.on('exit', (code) => finish(() => reject(new Error(`worker exited (${code}) without answering`))));
  });
}
