/**
 * The process-wide worker pool for heavy work (docs/workers.md):
 *
 *   const info = await workers.run('pdf.info', [bytes, { password }], { signal, progress, deadlineMs });
 *
 * Operations are registered by name in ./operations.ts; the server sizes the pool from its settings at
 * start (configureWorkers). The pool starts its threads on first use and stops idle ones.
 */
import { type PoolOptions, type RunOptions, WorkerPool } from './pool.ts';
import type { OpArgs, OpName, OpResult } from './operations.ts';

let pool: WorkerPool | undefined;
let options: PoolOptions = {};

export const workers = {
  run<K extends OpName>(op: K, args: OpArgs<K>, opts?: RunOptions): Promise<OpResult<K>> {
    return (pool ??= new WorkerPool(options)).run(op, args, opts) as Promise<OpResult<K>>;
  },
  stats: () => pool?.stats,
};

/** Sets the pool's size and recycling (before first use; a running pool is replaced, its threads stopped). */
export function configureWorkers(opts: PoolOptions): void {
  if (JSON.stringify(opts) === JSON.stringify(options)) return;
  options = opts;
  const old = pool;
  pool = undefined;
  void old?.close();
}

export async function closeWorkers(): Promise<void> {
  const old = pool;
  pool = undefined;
  await old?.close();
}

export { type PoolOptions, type RunOptions, WorkerPool } from './pool.ts';
