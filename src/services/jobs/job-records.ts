/** Polling and cancelling job records, with the ownership, expiry and fleet rules of docs/jobs.md. */
import { deleteJobsEndedBefore, getJob, type JobRow, requestCancel } from '../../store/jobs.ts';
import type { Db } from '../../store/schema.ts';
import { notFound, ServiceError } from '../errors.ts';
import type { TaskRunner } from './task-runner.ts';

const iso = (ms: number | null) => (ms == null ? null : new Date(Number(ms)).toISOString());

export type CancelAnswer = { kind: 'cancelled'; record: string } | { kind: 'requested'; node: string };

export class JobRecords {
  /** `nodeIsLive`: on a fleet, whether a node still heartbeats (a result held by a dead node is gone). */
  constructor(
    private db: Db,
    private runner: TaskRunner,
    private nodeTag: string,
    private retentionSeconds: number,
    private nodeIsLive?: (tag: string) => boolean,
  ) {}

  /** The record as JSON text; `result` is spliced in verbatim so it is byte-for-byte the synchronous answer. */
  async poll(id: string, ownerId: string): Promise<string> {
    const row = await this.#visible(id, ownerId);
    let resultText = 'null';
    if (row.status === 'completed') {
      if (row.result_location === 'node') {
        if (row.node !== this.nodeTag) {
          // Re-routing to a node that stopped would loop: its memory, and the result with it, is gone.
          if (this.nodeIsLive && !this.nodeIsLive(row.node)) {
            throw notFound(`job '${id}' not found (its result was held by node ${row.node}, which has stopped)`);
          }
          throw misdirected(row.node);
        }
        const held = this.runner.heldResult(row.id);
        // Dropped to keep the node's memory bounded: gone, as an expired job is.
        if (held === undefined) throw notFound(`job '${id}' not found (its result is no longer held)`);
        resultText = held;
      } else resultText = row.result ?? 'null';
    }
    return render(row, resultText);
  }

  async cancel(id: string, ownerId: string): Promise<CancelAnswer> {
    if (await this.runner.cancel(id, { ownerId })) return { kind: 'cancelled', record: await this.#recordOrInline(id, ownerId) };
    const row = await this.#visible(id, ownerId);
    if (row.status === 'processing' && row.node !== this.nodeTag) {
      await requestCancel(this.db, id);
      return { kind: 'requested', node: row.node };
    }
    return { kind: 'cancelled', record: await this.poll(id, ownerId) };
  }

  /** An inline execution has no record: answer with its cancelled state. */
  async #recordOrInline(id: string, ownerId: string): Promise<string> {
    const row = await getJob(this.db, id);
    if (row && row.owner_id === ownerId) return this.poll(id, ownerId);
    return JSON.stringify({ job_id: id, status: 'cancelled' });
  }

  async #visible(id: string, ownerId: string): Promise<JobRow> {
    const row = await getJob(this.db, id);
    // Another key's job is indistinguishable from an unknown one.
    if (!row || row.owner_id !== ownerId) throw notFound(`job '${id}' not found`);
    if (row.completed_at != null && Number(row.completed_at) + this.retentionSeconds * 1000 <= Date.now()) {
      throw notFound(`job '${id}' not found (expired)`);
    }
    return row;
  }

  /** Removes records one retention period after they ended, and the node-held results with them. */
  async sweep(now = Date.now()): Promise<number> {
    const n = await deleteJobsEndedBefore(this.db, now - this.retentionSeconds * 1000);
    for (const id of this.runner.heldResultIds()) {
      if (!(await getJob(this.db, id))) this.runner.dropHeldResult(id);
    }
    return n;
  }
}

export const misdirected = (node: string) =>
  new ServiceError(421, 'not_on_this_node', `this job's result is held by node ${node}`, {
    fields: { node, hint: `re-send the request to node ${node} (cookie svc-node=${node})` },
  });

/** What a poller of `GET /svc/v1/jobs/{id}` reads from the job it gets back. */
export interface JobView {
  status: string;
  result?: unknown;
  error?: string;
  error_code?: number;
  error_reason?: string;
  progress_current?: number | null;
  progress_total?: number | null;
}

function render(row: JobRow, resultText: string): string {
  const head = {
    job_id: row.id,
    task: row.task,
    status: row.status,
  };
  const tail = {
    error: row.error,
    error_code: row.error_code,
    error_reason: row.error_reason,
    progress_current: row.progress_current,
    progress_total: row.progress_total,
    created_at: iso(row.created_at),
    completed_at: iso(row.completed_at),
  };
  return `${JSON.stringify(head).slice(0, -1)},"result":${resultText},${JSON.stringify(tail).slice(1)}`;
}
