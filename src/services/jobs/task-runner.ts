/**
 * Runs tasks under the job contract (docs/jobs.md):
 *  - Prefer: respond-async → a job record, 202 before any work runs;
 *  - sync timeout 0 → inline, never a job; positive → race the work against the timeout, job when it loses;
 *  - per-owner in-flight ceiling counted from admission until the work completes;
 *  - cancellation through the task's abort signal; a blocked synchronous caller learns of it at once.
 * Every execution, inline or not, is in this node's registry so the operator can list and cancel it.
 */
import { randomId } from '../../ids.ts';
import type { Logger } from '../../log.ts';
import { cancelRequestsFor, failLostJobs, finishJob, insertJob, type JobRow, setProgress } from '../../store/jobs.ts';
import type { Db } from '../../store/schema.ts';
import { inputTooLarge, isServiceError, ServiceError } from '../errors.ts';
import type { FileStore } from '../files/file-store.ts';
import type { Owner } from '../keys/api-keys.ts';
import { BinaryResult, CancelledError, type Task, type TaskContext } from './task.ts';
import { NodeResults } from './node-results.ts';

/** Results up to this size live in the shared record; larger ones stay in this node's memory. */
export const SHARED_RESULT_LIMIT = 4 * 1024 * 1024;

export type Outcome =
  | { ok: true; json: string }
  | { ok: true; binary: BinaryResult }
  | { ok: false; error: ServiceError };

export type Submission =
  | { kind: 'inline'; outcome: Outcome }
  | { kind: 'accepted'; jobId: string; task: string }
  | { kind: 'closed'; by: 'cancel' | 'client' };

export interface ExecutionView {
  job_id: string;
  owner_id: string;
  task: string;
  mode: 'inline' | 'job';
  started_at: string;
  progress_current: number | null;
  progress_total: number | null;
}

interface Execution {
  id: string;
  owner: Owner;
  task: string;
  mode: 'inline' | 'job';
  startedAt: number;
  progress: { current: number | null; total: number | null };
  controller: AbortController;
  /** Resolves when the job row exists (job mode only). */
  registered?: Promise<void>;
  /** Resolves when the execution is cancelled or its caller leaves. */
  closed: Promise<'cancel' | 'client'>;
  close(by: 'cancel' | 'client'): void;
}

export interface RunnerOptions {
  db: Db;
  nodeTag: string;
  files: FileStore;
  log: Logger;
  maxJobsPerOwner: number;
  syncTimeoutSeconds: () => Promise<number>;
  /** Live nodes of the fleet this node belongs to; absent when it is not a fleet member. */
  liveNodes?: () => number;
}

export class TaskRunner {
  #executions = new Map<string, Execution>();
  #inflight = new Map<string, number>();
  /** Results over the shared-record limit, held by this node until retention ends (bounded by bytes). */
  readonly #nodeResults = new NodeResults();

  constructor(private o: RunnerOptions) {}

  /** A result this node holds because it was too large for the shared record. */
  heldResult(id: string): string | undefined {
    return this.#nodeResults.get(id);
  }

  /** Ids of the results this node holds. */
  heldResultIds(): string[] {
    return this.#nodeResults.ids();
  }

  dropHeldResult(id: string): void {
    this.#nodeResults.delete(id);
  }

  /** At start: this node's jobs left processing by a previous process are failed with job_lost. */
  recoverLostJobs(): Promise<number> {
    return failLostJobs(this.o.db, this.o.nodeTag, Date.now());
  }

  /** Whether this node is one of a fleet (its 202 answers then carry the node cookie). */
  get fleetMember(): boolean {
    return this.o.liveNodes !== undefined;
  }

  get nodeTag(): string {
    return this.o.nodeTag;
  }

  /** This node's share of the per-key ceiling: on N live nodes, the ceiling divided by N (at least 1). */
  ceiling(): number {
    const n = this.o.liveNodes?.() ?? 1;
    return Math.max(1, Math.floor(this.o.maxJobsPerOwner / Math.max(1, n)));
  }

  inflightOf(ownerId: string): number {
    return this.#inflight.get(ownerId) ?? 0;
  }

  active(): ExecutionView[] {
    return [...this.#executions.values()].map((e) => ({
      job_id: e.id,
      owner_id: e.owner.id,
      task: e.task,
      mode: e.mode,
      started_at: new Date(e.startedAt).toISOString(),
      progress_current: e.progress.current,
      progress_total: e.progress.total,
    }));
  }

  hasRunningJobs(): boolean {
    for (const e of this.#executions.values()) if (e.mode === 'job') return true;
    return false;
  }

  async submit<I>(task: Task<I>, input: I, opts: { owner: Owner; preferAsync: boolean; clientSignal?: AbortSignal }): Promise<Submission> {
    const { owner } = opts;
    const ceiling = this.ceiling();
    if (this.inflightOf(owner.id) >= ceiling) {
      const share = ceiling === this.o.maxJobsPerOwner
        ? ''
        : ` (this node's share of ${this.o.maxJobsPerOwner} over ${this.o.liveNodes?.()} live nodes)`;
      throw new ServiceError(
        429,
        'too_many_inflight_jobs',
        `in-flight ceiling of ${ceiling} tasks for this API key reached${share}; retry after some finish`,
        { headers: { 'Retry-After': '5' } },
      );
    }
    const exec = this.#admit(task.name, owner);
    try {
      if (opts.preferAsync) {
        await this.#register(exec);
        const work = new Promise<void>((r) => setTimeout(r, 0)).then(() => this.#run(task, input, exec));
        void this.#settle(exec, work);
        return { kind: 'accepted', jobId: exec.id, task: task.name };
      }
      const timeoutS = await this.o.syncTimeoutSeconds();
      const work = this.#run(task, input, exec);
      const onClient = () => exec.close('client');
      opts.clientSignal?.addEventListener('abort', onClient, { once: true });
      if (opts.clientSignal?.aborted) exec.close('client');
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = timeoutS > 0
        ? new Promise<'timeout'>((r) => {
          timer = setTimeout(() => r('timeout'), timeoutS * 1000);
        })
        : new Promise<never>(() => {});
      const winner = await Promise.race([work.then((o) => ({ o })), timedOut, exec.closed]);
      clearTimeout(timer);
      opts.clientSignal?.removeEventListener('abort', onClient);
      if (winner === 'timeout') {
        await this.#register(exec);
        void this.#settle(exec, work);
        return { kind: 'accepted', jobId: exec.id, task: task.name };
      }
      void this.#settle(exec, work);
      if (winner === 'cancel' || winner === 'client') return { kind: 'closed', by: winner };
      return { kind: 'inline', outcome: winner.o };
    } catch (e) {
      // Registration failed: nothing runs, nothing is counted.
      this.#release(exec);
      throw e;
    }
  }

  /** Cancels an execution of this node. Returns false when none is running here under that id. */
  async cancel(id: string, by: { ownerId: string } | 'operator'): Promise<boolean> {
    const exec = this.#executions.get(id);
    if (!exec || (by !== 'operator' && exec.owner.id !== by.ownerId)) return false;
    exec.close('cancel');
    if (exec.mode === 'job') {
      await exec.registered;
      await finishJob(this.o.db, id, {
        status: 'cancelled',
        completed_at: Date.now(),
        error: 'the job was cancelled',
        error_code: 499,
        error_reason: 'cancelled',
      });
    }
    // Its place is free once the answer says cancelled (its record written first, so no one sees an execution
    // gone while the record still says processing): the caller may submit again at once, not only when the work
    // has noticed its abort signal (a long native call notices late). Its settling releases nothing twice.
    this.#release(exec);
    return true;
  }

  /** Honours cancellations that other nodes recorded in the shared database (called periodically). */
  async pollCancelRequests(): Promise<void> {
    if (!this.hasRunningJobs()) return;
    for (const id of await cancelRequestsFor(this.o.db, this.o.nodeTag)) await this.cancel(id, 'operator');
  }

  #admit(taskName: string, owner: Owner): Execution {
    let close!: (by: 'cancel' | 'client') => void;
    const closed = new Promise<'cancel' | 'client'>((r) => {
      close = r;
    });
    const controller = new AbortController();
    const exec: Execution = {
      id: `${this.o.nodeTag}-${randomId(20)}`,
      owner,
      task: taskName,
      mode: 'inline',
      startedAt: Date.now(),
      progress: { current: null, total: null },
      controller,
      closed,
      close: (by) => {
        if (!controller.signal.aborted) controller.abort(new CancelledError(by));
        close(by);
      },
    };
    this.#executions.set(exec.id, exec);
    this.#inflight.set(owner.id, this.inflightOf(owner.id) + 1);
    return exec;
  }

  #release(exec: Execution): void {
    if (!this.#executions.delete(exec.id)) return;
    const n = this.inflightOf(exec.owner.id) - 1;
    if (n <= 0) this.#inflight.delete(exec.owner.id);
    else this.#inflight.set(exec.owner.id, n);
  }

  #register(exec: Execution): Promise<void> {
    exec.mode = 'job';
    const row: JobRow = {
      id: exec.id,
      owner_id: exec.owner.id,
      node: this.o.nodeTag,
      task: exec.task,
      status: 'processing',
      result: null,
      result_location: null,
      error: null,
      error_code: null,
      error_reason: null,
      progress_current: exec.progress.current,
      progress_total: exec.progress.total,
      cancel_requested: 0,
      created_at: exec.startedAt,
      completed_at: null,
    };
    const registered = insertJob(this.o.db, row).then(() => {});
    exec.registered = registered;
    return registered;
  }

  async #run<I>(task: Task<I>, input: I, exec: Execution): Promise<Outcome> {
    let lastWrite = 0;
    const ctx: TaskContext = {
      signal: exec.controller.signal,
      owner: exec.owner,
      progress: (current, total) => {
        exec.progress = { current, total: total === undefined ? exec.progress.total : total };
        const now = Date.now();
        if (exec.mode === 'job' && now - lastWrite > 250) {
          lastWrite = now;
          void exec.registered?.then(() => setProgress(this.o.db, exec.id, exec.progress.current, exec.progress.total)).catch(() => {});
        }
      },
      saveFile: async (bytes, meta) => (await this.o.files.saveBytes(exec.owner.id, bytes, { ...meta, purpose: 'task_result' })).id,
    };
    try {
      if (exec.controller.signal.aborted) throw exec.controller.signal.reason; // cancelled before it started
      const value = await task.run(input, ctx);
      if (value instanceof BinaryResult) return { ok: true, binary: value };
      return { ok: true, json: JSON.stringify(value) };
    } catch (e) {
      return { ok: false, error: this.#classify(e, exec) };
    }
  }

  /** Same cause, same answer: expected failures keep their status and reason; the rest are a sanitized 500. */
  #classify(e: unknown, exec: Execution): ServiceError {
    if (isServiceError(e)) return e;
    if (exec.controller.signal.aborted) {
      return new ServiceError(499, 'cancelled', (exec.controller.signal.reason as Error)?.message ?? 'cancelled');
    }
    this.o.log.error(`task ${exec.task} failed job=${exec.id}`, e);
    return new ServiceError(500, 'internal_error', `Internal server error (job ${exec.id})`);
  }

  /** Waits for the work, writes the job's terminal state when it is a job, and frees its place. */
  async #settle(exec: Execution, work: Promise<Outcome>): Promise<void> {
    try {
      const outcome = await work;
      if (exec.mode !== 'job') return;
      await exec.registered;
      await finishJob(this.o.db, exec.id, await this.#terminalFields(exec, outcome));
    } catch (e) {
      this.o.log.error(`could not record the end of job ${exec.id}`, e);
    } finally {
      this.#release(exec);
    }
  }

  async #terminalFields(exec: Execution, outcome: Outcome): Promise<Partial<JobRow> & Pick<JobRow, 'status' | 'completed_at'>> {
    const completed_at = Date.now();
    const progress = { progress_current: exec.progress.current, progress_total: exec.progress.total };
    if (!outcome.ok) {
      const status = outcome.error.status === 499 ? 'cancelled' : 'failed';
      return {
        status,
        completed_at,
        error: outcome.error.message,
        error_code: outcome.error.status,
        error_reason: outcome.error.reason,
        ...progress,
      };
    }
    // A binary answer is recorded as a new file of the owner (docs/jobs.md): the record stays JSON.
    const json = 'json' in outcome ? outcome.json : JSON.stringify(await this.#binaryRecord(exec, outcome.binary));
    if (new TextEncoder().encode(json).byteLength > SHARED_RESULT_LIMIT) {
      if (!this.#nodeResults.put(exec.id, json)) {
        const e = inputTooLarge(`the result (${json.length} characters) is larger than this node can hold`);
        return { status: 'failed', completed_at, error: e.message, error_code: e.status, error_reason: e.reason, ...progress };
      }
      return { status: 'completed', completed_at, result: null, result_location: 'node', ...progress };
    }
    return { status: 'completed', completed_at, result: json, result_location: 'record', ...progress };
  }

  async #binaryRecord(exec: Execution, b: BinaryResult) {
    const file = await this.o.files.saveBytes(exec.owner.id, b.bytes, {
      filename: b.filename ?? 'result',
      contentType: b.contentType,
      purpose: 'task_result',
    });
    return {
      object: 'file',
      file_id: file.id,
      filename: file.filename,
      content_type: file.content_type,
      bytes: file.bytes,
      content_url: `/svc/v1/files/${file.id}/content`,
    };
  }
}
