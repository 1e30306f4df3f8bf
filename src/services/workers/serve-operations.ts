/**
 * The worker side of the pool: receives tasks, runs the named operation, answers with its result (buffers
 * moved, not copied) or its error, and reports the memory the thread now holds so the pool can recycle it.
 */
import { lowerThreadPriority, parentChannel, threadMemoryBytes } from '../../runtime/worker.ts';
import { ServiceError } from '../errors.ts';
import { type Limits, setLimits } from '../limits.ts';
import { type FromWorker, isPoisoning, toWire, type ToWorker } from './protocol.ts';

export interface OpContext {
  signal: AbortSignal;
  progress(done: number | null, total?: number | null): void;
  limits: Limits;
}

// deno-lint-ignore no-explicit-any
export type Operation = (args: any, ctx: OpContext) => Promise<unknown> | unknown;

/** ArrayBuffers reachable from a result (typed arrays in arrays and plain objects), to move them back. */
function transferables(v: unknown, out: Set<ArrayBuffer> = new Set(), depth = 0): Set<ArrayBuffer> {
  if (depth > 8 || v === null || typeof v !== 'object') return out;
  if (ArrayBuffer.isView(v)) {
    if (v.buffer instanceof ArrayBuffer && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) out.add(v.buffer);
  } else if (Array.isArray(v)) { for (const x of v) transferables(x, out, depth + 1); }
  else for (const x of Object.values(v)) transferables(x, out, depth + 1);
  return out;
}

export async function serveOperations(ops: Record<string, Operation>): Promise<void> {
  const parent = await parentChannel();
  const running = new Map<number, AbortController>();
  const send = (m: FromWorker, t?: Transferable[]) => parent.post(m, t);
  parent.onMessage(async (raw) => {
    const m = raw as ToWorker;
    if (m.type === 'abort') return void running.get(m.id)?.abort();
    if (m.type === 'setup') return void lowerThreadPriority(m.nice);
    const ac = new AbortController();
    running.set(m.id, ac);
    try {
      const op = ops[m.op];
      if (!op) throw new ServiceError(500, 'internal_error', `no worker operation named ${m.op}`);
      setLimits(m.limits); // module-level checks (page counts in the PDF engines) read the same values
      const ctx: OpContext = {
        signal: ac.signal,
        limits: m.limits,
        progress: (done, total) => send({ type: 'progress', id: m.id, done, total: total ?? null }),
      };
      const value = await op(m.args, ctx);
      const memory = await threadMemoryBytes();
      try {
        send({ type: 'done', id: m.id, value, memory }, [...transferables(value)]);
      } catch {
        send({ type: 'done', id: m.id, value, memory }); // a buffer could not be moved: copy instead
      }
    } catch (e) {
      send({ type: 'failed', id: m.id, error: toWire(e), memory: await threadMemoryBytes().catch(() => 0), poisoned: isPoisoning(e) });
    } finally {
      running.delete(m.id);
    }
  });
  send({ type: 'ready' });
}
