/**
 * Which SQL dialect a Kysely handle speaks. Most store modules use the query builder and never ask; the few
 * with raw SQL (full text, vectors, catalog lookups) branch on this.
 */
import { type Kysely, PostgresAdapter } from 'kysely';

// deno-lint-ignore no-explicit-any
export const isPostgres = (db: Kysely<any>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

/** `postgres://` and `postgresql://` URLs name a PostgreSQL server; everything else is libSQL. */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);
