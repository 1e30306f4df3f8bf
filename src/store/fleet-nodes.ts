/** Fleet membership rows: each node writes its heartbeat; live nodes are those seen recently. */
import type { Db } from './schema.ts';

export async function heartbeat(db: Db, tag: string, now: number, startedAt: number): Promise<void> {
  await db.insertInto('fleet_nodes').values({ tag, started_at: startedAt, seen_at: now })
    .onConflict((oc) => oc.column('tag').doUpdateSet({ seen_at: now, started_at: startedAt })).execute();
}

/** Tags of the nodes seen at or after `since`. */
export async function liveNodeTags(db: Db, since: number): Promise<string[]> {
  const rows = await db.selectFrom('fleet_nodes').select('tag').where('seen_at', '>=', since).orderBy('tag').execute();
  return rows.map((r) => r.tag);
}

/** Tags of the nodes not seen since `before`. */
export async function silentNodeTags(db: Db, before: number): Promise<string[]> {
  const rows = await db.selectFrom('fleet_nodes').select('tag').where('seen_at', '<', before).execute();
  return rows.map((r) => r.tag);
}

export const leaveFleet = (db: Db, tag: string) => db.deleteFrom('fleet_nodes').where('tag', '=', tag).execute();
