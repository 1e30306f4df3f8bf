/** What a task is: a function of (validated input, context) to a result. It never knows how it runs. */
import type { Owner } from '../keys/api-keys.ts';

/** A binary answer (a PDF, an image, a zip). JSON answers are plain values. */
export class BinaryResult {
  constructor(readonly bytes: Uint8Array, readonly contentType: string, readonly filename?: string) {}
}

export interface TaskContext {
  /** Aborted when the job is cancelled or the synchronous caller goes away. */
  signal: AbortSignal;
  /** Live progress (for example pages processed). */
  progress(current: number | null, total?: number | null): void;
  owner: Owner;
  /** Stores bytes as a new uploaded file of the owner (for `delivery: file_id`); returns its id. */
  saveFile(bytes: Uint8Array, meta: { filename: string; contentType: string }): Promise<string>;
}

export interface Task<I> {
  /** Names the task in messages, logs and the operator view (e.g. "pdf-merge"). */
  name: string;
  run(input: I, ctx: TaskContext): Promise<unknown>;
}

/** The cancellation reasons put on a task's abort signal. */
export class CancelledError extends Error {
  constructor(readonly by: 'cancel' | 'client') {
    super(by === 'cancel' ? 'the job was cancelled' : 'the client closed the connection');
    this.name = 'AbortError';
  }
}
