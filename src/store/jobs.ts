/** Job records, shared by every node of a fleet through the database. */
import type { Db, JobTable } from './schema.ts';

export type JobRow = JobTable;

export const insertJob = (db: Db, row: JobRow) => db.insertInto('jobs').values(row).execute();

export const getJob = (db: Db, id: string) => db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();

export const setProgress = (db: Db, id: string, current: number | null, total: number | null) =>
  db.updateTable('jobs').set({ progress_current: current, progress_total: total }).where('id', '=', id).where('status', '=', 'processing')
    .execute();

/** Moves a processing job to a terminal state; false when it was no longer processing (cancelled meanwhile). */
export async function finishJob(db: Db, id: string, fields: Partial<JobRow> & Pick<JobRow, 'status' | 'completed_at'>): Promise<boolean> {
  const r = await db.updateTable('jobs').set(fields).where('id', '=', id).where('status', '=', 'processing').executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export const requestCancel = (db: Db, id: string) =>
  db.updateTable('jobs').set({ cancel_requested: 1 }).where('id', '=', id).where('status', '=', 'processing').execute();

/** Ids of this node's processing jobs that another node asked to cancel. */
export async function cancelRequestsFor(db: Db, node: string): Promise<string[]> {
  const rows = await db.selectFrom('jobs').select('id').where('node', '=', node).where('status', '=', 'processing').where(
    'cancel_requested',
    '=',
    1,
  ).execute();
  return rows.map((r) => r.id);
}

/** A node's jobs still processing were lost with it: at its own restart, or when the fleet saw it die. */
export async function failLostJobs(
  db: Db,
  node: string,
  at: number,
  message = 'the job was lost when its node restarted; submit it again',
): Promise<number> {
  const r = await db.updateTable('jobs')
    .set({ status: 'failed', error: message, error_code: 503, error_reason: 'job_lost', completed_at: at })
    .where('node', '=', node).where('status', '=', 'processing').executeTakeFirst();
  return Number(r.numUpdatedRows);
}

export async function deleteJobsEndedBefore(db: Db, before: number): Promise<number> {
  const r = await db.deleteFrom('jobs').where('status', '!=', 'processing').where('completed_at', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
