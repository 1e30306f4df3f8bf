/**
 * Messages between the pool and its workers, and how an error crosses the thread boundary: a ServiceError
 * keeps its status, reason, message and details; anything else is classified (see `classifyFailure`).
 */
import { ServiceError } from '../errors.ts';
import type { Limits } from '../limits.ts';

export type ToWorker =
  | { type: 'setup'; nice: number } // nice increment of the worker's thread
  | { type: 'run'; id: number; op: string; args: unknown; limits: Limits }
  | { type: 'abort'; id: number };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'progress'; id: number; done: number | null; total: number | null }
  | { type: 'done'; id: number; value: unknown; memory: number }
  | { type: 'failed'; id: number; error: WireError; memory: number; poisoned: boolean };

export interface WireError {
  name: string;
  message: string;
  status?: number;
  reason?: string;
  details?: unknown;
  fields?: Record<string, unknown>;
}

export function toWire(e: unknown): WireError {
  if (e instanceof ServiceError) {
    return { name: 'ServiceError', message: e.message, status: e.status, reason: e.reason, details: e.details, fields: e.fields };
  }
  if (e instanceof Error) return { name: e.name, message: e.message };
  return { name: 'Error', message: String(e) };
}

/**
 * Errors that leave an engine in an unknown state: a WASM trap, an allocation failure, a stack overflow.
 * The worker that saw one is discarded.
 */
export function isPoisoning(e: unknown): boolean {
  if (e instanceof ServiceError) return false;
  if (typeof WebAssembly !== 'undefined' && e instanceof WebAssembly.RuntimeError) return true;
  if (e instanceof RangeError) return true; // "Array buffer allocation failed", "Maximum call stack size exceeded", WASM memory growth
  const msg = e instanceof Error ? e.message : String(e);
  return /memory access out of bounds|out of memory|unreachable|Aborted\(|allocation failed/i.test(msg);
}

export function fromWire(w: WireError): Error {
  if (w.name === 'ServiceError' && w.status && w.reason) {
    return new ServiceError(w.status, w.reason, w.message, { details: w.details, fields: w.fields });
  }
  const e = new Error(w.message);
  e.name = w.name;
  return e;
}
