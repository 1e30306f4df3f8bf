/** Opens the database (libSQL by default) behind Kysely and applies migrations. */
import { type Dialect, Kysely } from 'kysely';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { builtinSqliteDialect } from '../runtime/sqlite.ts';
import { isPostgresUrl } from './dialect.ts';
import { migrate } from './migrations.ts';
import type { Database, Db } from './schema.ts';

export interface OpenedStore {
  db: Db;
  /** Which driver serves the database: 'libsql', 'builtin-sqlite' (compiled binary fallback) or 'postgres'. */
  driver: string;
  close(): Promise<void>;
}

async function libsqlDialect(url: string, authToken?: string): Promise<Dialect> {
  const { createClient } = await import('@libsql/client');
  const { LibsqlDialect } = await import('@libsql/kysely-libsql');
  const client = createClient({ url, authToken: authToken || undefined });
  if (url.startsWith('file:')) {
    // WAL lets pollers read while a job writes; busy_timeout rides over short write locks.
    await client.execute('PRAGMA journal_mode = WAL');
    await client.execute('PRAGMA busy_timeout = 5000');
  }
  // deno-lint-ignore no-explicit-any
  return new LibsqlDialect({ client: client as any });
}

/**
 * PostgreSQL through node-postgres. BIGINT (int8) columns hold millisecond timestamps and byte counts, all
 * far below 2^53, so they are read as numbers as libSQL returns them (node-postgres gives strings by default).
 */
async function postgresDialect(url: string): Promise<Dialect> {
  const pg = (await import('pg')).default;
  const { PostgresDialect } = await import('kysely');
  const INT8 = 20;
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text'),
  };
  // deno-lint-ignore no-explicit-any
  const pool = new pg.Pool({ connectionString: url, max: 10, types: types as any });
  return new PostgresDialect({ pool });
}

/** `file:/a/b.db`, `file:///a/b.db` or `file:rel.db` → the path; null for remote URLs. */
export const filePathOf = (url: string): string | null =>
  url.startsWith('file:') ? url.slice('file:'.length).replace(/^\/\/(?=\/)/, '') : null;

export async function openStore(url: string, authToken?: string): Promise<OpenedStore> {
  if (isPostgresUrl(url)) {
    const db = new Kysely<Database>({ dialect: await postgresDialect(url) });
    await migrate(db);
    return { db, driver: 'postgres', close: () => db.destroy() };
  }
  const file = filePathOf(url);
  if (file) await mkdir(dirname(file), { recursive: true });
  let dialect: Dialect;
  let driver = 'libsql';
  try {
    dialect = await libsqlDialect(url, authToken);
  } catch (err) {
    // The native addon is missing (single binary): fall back to the runtime's own SQLite for files.
    const builtin = file ? await builtinSqliteDialect(file) : null;
    if (!builtin) throw err;
    dialect = builtin;
    driver = 'builtin-sqlite';
  }
  const db = new Kysely<Database>({ dialect });
  await migrate(db);
  return { db, driver, close: () => db.destroy() };
}
