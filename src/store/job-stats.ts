/** Job counts by status, for the admin dashboard. */
import type { Db } from './schema.ts';

export async function countJobsByStatus(db: Db): Promise<Record<string, number>> {
  const rows = await db.selectFrom('jobs').select((eb) => ['status', eb.fn.countAll().as('n')]).groupBy('status').execute();
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
