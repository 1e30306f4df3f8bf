/**
 * OpenAI vector store search `filters` (comparison eq/ne/gt/gte/lt/lte/in/nin, compound and/or, nested) as
 * SQL over the chunk row aliased `c`, whose `meta.metadata` holds the file's attributes. Each comparison
 * is compiled by the typed single-field filter of filter-sql.ts, so a value compares only with its own type.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Scalar } from '../../services/search/filter.ts';
import { pgFilter, sqliteFilter } from './filter-sql.ts';

export type AttributeFilter =
  | { type: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte'; key: string; value: Scalar }
  | { type: 'in' | 'nin'; key: string; value: Scalar[] }
  | { type: 'and' | 'or'; filters: AttributeFilter[] };

/** ` and (…)` for the search queries; `pg` picks the PostgreSQL operators. */
export function attributeFilterSql(f: AttributeFilter, pg: boolean): RawBuilder<unknown> {
  return sql` and ${node(f, pg)}`;
}

function node(f: AttributeFilter, pg: boolean): RawBuilder<unknown> {
  if ('filters' in f) {
    if (!f.filters.length) return f.type === 'and' ? sql`(1 = 1)` : sql`(1 = 0)`;
    return sql`(${sql.join(f.filters.map((x) => node(x, pg)), f.type === 'and' ? sql` and ` : sql` or `)})`;
  }
  const compile = pg ? pgFilter : sqliteFilter;
  const key = f.key;
  const one = (op: string, value: Scalar | Scalar[]) => sql`(1 = 1${compile({ [key]: { [op]: value } } as never)!})`;
  // nin: a missing attribute (NULL comparison) counts as "not in", as ne treats it
  if (f.type === 'nin') return sql`(not coalesce(${one('in', f.value)}, ${pg ? sql`false` : sql`0`}))`;
  return one(f.type, f.value);
}
