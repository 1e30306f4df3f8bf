/**
 * A search filter (services/search/filter.ts) as SQL over the chunk row aliased `c`, whose `meta` holds
 * the document's metadata under `metadata`. Comparisons are typed: a number compares with numbers only,
 * a string with strings only (a field of another type never matches), as the in-memory `matches` does.
 */
import { type RawBuilder, sql } from 'kysely';
import { conditions, type Filter, type Scalar } from '../../services/search/filter.ts';

const OPS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** SQLite / libSQL: json_extract and json_type. */
export function sqliteFilter(f: Filter | undefined): RawBuilder<unknown> | undefined {
  const parts = conditions(f).map(({ field, op, value }) => {
    const path = `$.metadata."${field}"`;
    const x = sql`json_extract(c.meta, ${path})`;
    const t = sql`json_type(c.meta, ${path})`;
    const typed = (val: Scalar) =>
      typeof val === 'boolean'
        ? sql`${t} = ${val ? 'true' : 'false'}`
        : typeof val === 'number'
        ? sql`(${t} in ('integer', 'real') and ${x} = ${val})`
        : sql`(${t} = 'text' and ${x} = ${val})`;
    if (op === 'eq') return typed(value as Scalar);
    if (op === 'ne') return sql`not coalesce(${typed(value as Scalar)}, 0)`;
    if (op === 'in') return sql`(${sql.join((value as Scalar[]).map(typed), sql` or `)})`;
    const ty = typeof value === 'number' ? sql`${t} in ('integer', 'real')` : sql`${t} = 'text'`;
    return sql`(${ty} and ${x} ${sql.raw(OPS[op as keyof typeof OPS])} ${value})`;
  });
  return parts.length ? sql` and ${sql.join(parts, sql` and `)}` : undefined;
}

/** PostgreSQL: jsonb operators on `c.meta`. */
export function pgFilter(f: Filter | undefined): RawBuilder<unknown> | undefined {
  const parts = conditions(f).map(({ field, op, value }) => {
    // `::jsonb`: the whole-store schema keeps meta as text, a search cluster's own table as jsonb
    const x = sql`(c.meta::jsonb -> 'metadata' -> ${field})`;
    const typed = (val: Scalar) => sql`${x} = ${JSON.stringify(val)}::jsonb`;
    if (op === 'eq') return typed(value as Scalar);
    if (op === 'ne') return sql`(${x} is null or ${x} <> ${JSON.stringify(value)}::jsonb)`;
    if (op === 'in') return sql`(${sql.join((value as Scalar[]).map(typed), sql` or `)})`;
    const o = sql.raw(OPS[op as keyof typeof OPS]);
    return typeof value === 'number'
      ? sql`(jsonb_typeof(${x}) = 'number' and (${x} #>> '{}')::float8 ${o} ${value})`
      : sql`(jsonb_typeof(${x}) = 'string' and (${x} #>> '{}') ${o} ${value})`;
  });
  return parts.length ? sql` and ${sql.join(parts, sql` and `)}` : undefined;
}
