/**
 * The runtime's built-in SQLite as a Kysely dialect, for the compiled single binary where
 * @libsql/client's native addon cannot be embedded. Only Bun has one we use (bun:sqlite);
 * libSQL database files are SQLite files, so the same data directory works either way.
 */
import { type Dialect, SqliteDialect } from 'kysely';
import { runtimeName } from './env.ts';

// deno-lint-ignore no-explicit-any
type Any = any;

export async function builtinSqliteDialect(path: string): Promise<Dialect | null> {
  if (runtimeName !== 'bun') return null;
  const modName = 'bun:sqlite';
  const { Database } = await import(/* @vite-ignore */ modName);
  const raw = new Database(path, { create: true });
  raw.exec('PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;');
  // Kysely's SqliteDialect expects better-sqlite3's statement shape; bun:sqlite is close.
  const database = {
    close: () => raw.close(),
    prepare(sqlText: string) {
      const stmt = raw.prepare(sqlText);
      return {
        reader: stmt.columnNames.length > 0,
        all: (params: unknown[]) => stmt.all(...(params as Any[])),
        run: (params: unknown[]) => {
          const r = stmt.run(...(params as Any[]));
          return { changes: r?.changes ?? 0, lastInsertRowid: r?.lastInsertRowid ?? 0 };
        },
        iterate: (params: unknown[]) => stmt.iterate(...(params as Any[])),
      };
    },
  };
  return new SqliteDialect({ database: database as Any });
}
