/** API key rows. Tokens are never stored: only their SHA-256 and a display prefix. */
import type { ApiKeyTable, Db } from './schema.ts';

export type ApiKeyRow = ApiKeyTable;

export const insertKey = (db: Db, row: ApiKeyRow) => db.insertInto('api_keys').values(row).execute();

export const listKeys = (db: Db) => db.selectFrom('api_keys').selectAll().orderBy('created_at').execute();

export const findKeyByHash = (db: Db, tokenHash: string) =>
  db.selectFrom('api_keys').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();

export const findKey = (db: Db, id: string) => db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();

export async function revokeKey(db: Db, id: string, at: number): Promise<boolean> {
  const r = await db.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function countActiveKeys(db: Db): Promise<number> {
  const r = await db.selectFrom('api_keys').select((eb) => eb.fn.countAll().as('n')).where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export const touchKey = (db: Db, id: string, at: number) =>
  db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
