/** Metadata of uploaded files; the bytes live on disk under the data directory. */
import type { Db, FileTable } from './schema.ts';

export type FileRow = FileTable;

export const insertFile = (db: Db, row: FileRow) => db.insertInto('files').values(row).execute();

export const getFileRow = (db: Db, id: string) => db.selectFrom('files').selectAll().where('id', '=', id).executeTakeFirst();

export const deleteFileRow = (db: Db, id: string) => db.deleteFrom('files').where('id', '=', id).execute();

export const expiredFiles = (db: Db, now: number) => db.selectFrom('files').select(['id', 'path']).where('expires_at', '<=', now).execute();

export const setFilePurpose = (db: Db, id: string, purpose: string) =>
  db.updateTable('files').set({ purpose }).where('id', '=', id).execute();

export const listFileRows = (db: Db, ownerId: string, now: number) =>
  db.selectFrom('files').selectAll().where('owner_id', '=', ownerId).where('expires_at', '>', now).where('purpose', 'not in', [
    'task',
    'task-input',
  ]).orderBy('created_at', 'desc').limit(10_000).execute();

/** Files of one purpose whose bytes lie under a directory (this node's uploads). */
export const filesOfPurposeUnder = (db: Db, purpose: string, dir: string) =>
  db.selectFrom('files').select(['id', 'path']).where('purpose', '=', purpose).where('path', 'like', `${dir.replace(/[%_]/g, '')}%`)
    .execute();
