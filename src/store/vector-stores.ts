/** Vector stores and the files attached to them (their chunks live in the retrieval tables). */
import type { Db, VectorStoreFileTable, VectorStoreTable } from './schema.ts';

export type VectorStoreRow = VectorStoreTable;
export type VectorStoreFileRow = VectorStoreFileTable;

export const insertVectorStore = (db: Db, row: VectorStoreRow) => db.insertInto('vector_stores').values(row).execute();
export const getVectorStoreRow = (db: Db, id: string) => db.selectFrom('vector_stores').selectAll().where('id', '=', id).executeTakeFirst();
export const listVectorStoreRows = (db: Db, ownerId: string) =>
  db.selectFrom('vector_stores').selectAll().where('owner_id', '=', ownerId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(
    10_000,
  ).execute();
export const touchVectorStore = (db: Db, id: string, at: number) =>
  db.updateTable('vector_stores').set({ last_active_at: at }).where('id', '=', id).execute();
export const updateVectorStore = (db: Db, id: string, patch: Partial<Pick<VectorStoreRow, 'name' | 'metadata'>>) =>
  db.updateTable('vector_stores').set(patch).where('id', '=', id).execute();

export async function deleteVectorStoreRows(db: Db, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('vector_store_files').where('vector_store_id', '=', id).execute();
    await trx.deleteFrom('vector_stores').where('id', '=', id).execute();
  });
}

export const insertVectorStoreFile = (db: Db, row: VectorStoreFileRow) => db.insertInto('vector_store_files').values(row).execute();
export const getVectorStoreFileRow = (db: Db, storeId: string, fileId: string) =>
  db.selectFrom('vector_store_files').selectAll().where('vector_store_id', '=', storeId).where('file_id', '=', fileId).executeTakeFirst();
export const listVectorStoreFileRows = (db: Db, storeId: string) =>
  db.selectFrom('vector_store_files').selectAll().where('vector_store_id', '=', storeId).orderBy('created_at', 'desc').orderBy(
    'file_id',
    'desc',
  ).execute();
export const setVectorStoreFileStatus = (
  db: Db,
  storeId: string,
  fileId: string,
  status: VectorStoreFileRow['status'],
  lastError: string | null,
) =>
  db.updateTable('vector_store_files').set({ status, last_error: lastError }).where('vector_store_id', '=', storeId).where(
    'file_id',
    '=',
    fileId,
  ).execute();
export const deleteVectorStoreFileRow = (db: Db, storeId: string, fileId: string) =>
  db.deleteFrom('vector_store_files').where('vector_store_id', '=', storeId).where('file_id', '=', fileId).execute();
export const setVectorStoreFileAttributes = (db: Db, storeId: string, fileId: string, attributes: string) =>
  db.updateTable('vector_store_files').set({ attributes }).where('vector_store_id', '=', storeId).where('file_id', '=', fileId).execute();
