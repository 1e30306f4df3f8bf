/** Admin settings changeable at run time (for example the Sync Timeout), stored as JSON text. */
import type { Db } from './schema.ts';

export async function readSetting<T>(db: Db, key: string, fallback: T): Promise<T> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
  return row ? (JSON.parse(row.value) as T) : fallback;
}

export async function writeSetting(db: Db, key: string, value: unknown): Promise<void> {
  const text = JSON.stringify(value);
  const now = Date.now();
  await db.insertInto('settings').values({ key, value: text, updated_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value: text, updated_at: now })).execute();
}
