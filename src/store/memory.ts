/** Memory stores and their facts, each row owned by one key. */
import type { Db, MemoryFactTable, MemoryStoreTable } from './schema.ts';

export const insertMemoryStore = async (db: Db, row: MemoryStoreTable) => {
  await db.insertInto('memory_stores').values(row).execute();
};
export const getMemoryStore = (db: Db, owner: string, name: string) =>
  db.selectFrom('memory_stores').selectAll().where('owner', '=', owner).where('name', '=', name).executeTakeFirst();
export const listMemoryStores = (db: Db, owner: string) =>
  db.selectFrom('memory_stores').selectAll().where('owner', '=', owner).orderBy('name').execute();
export async function deleteMemoryStore(db: Db, owner: string, name: string): Promise<boolean> {
  await db.deleteFrom('memory_facts').where('owner', '=', owner).where('store', '=', name).execute();
  const r = await db.deleteFrom('memory_stores').where('owner', '=', owner).where('name', '=', name).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export const insertFact = async (db: Db, row: MemoryFactTable) => {
  await db.insertInto('memory_facts').values(row).execute();
};
export const listFacts = (db: Db, owner: string, store: string) =>
  db.selectFrom('memory_facts').selectAll().where('owner', '=', owner).where('store', '=', store).orderBy('created_at').orderBy('id')
    .execute();
export const getFact = (db: Db, owner: string, store: string, id: string) =>
  db.selectFrom('memory_facts').selectAll().where('owner', '=', owner).where('store', '=', store).where('id', '=', id).executeTakeFirst();
export const findFactByText = (db: Db, owner: string, store: string, text: string) =>
  db.selectFrom('memory_facts').select('id').where('owner', '=', owner).where('store', '=', store).where('text', '=', text)
    .executeTakeFirst();
export const factsByIds = (
  db: Db,
  ids: string[],
) => (ids.length ? db.selectFrom('memory_facts').selectAll().where('id', 'in', ids).execute() : Promise.resolve([]));
export async function deleteFact(db: Db, owner: string, store: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('memory_facts').where('owner', '=', owner).where('store', '=', store).where('id', '=', id)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
