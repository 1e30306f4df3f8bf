/**
 * OpenAI's vector store search filters over file attributes: comparisons (eq, ne, gt, gte, lt, lte, in,
 * nin) and compound and/or, nested. Used by vector store search and the file_search tool of Responses;
 * compiled to SQL in store/search/attribute-filter.ts.
 */
import * as v from 'valibot';
import type { AttributeFilter } from '../../store/search/attribute-filter.ts';

export type { AttributeFilter };

const FilterKey = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/, 'a filter key is an attribute name: letters, digits, _ . - (up to 64)'),
);
const FilterScalar = v.union([v.string(), v.number(), v.boolean()]);
const Comparison = v.variant('type', [
  v.object({ type: v.picklist(['eq', 'ne']), key: FilterKey, value: FilterScalar }),
  v.object({ type: v.picklist(['gt', 'gte', 'lt', 'lte']), key: FilterKey, value: v.union([v.string(), v.number()]) }),
  v.object({ type: v.picklist(['in', 'nin']), key: FilterKey, value: v.pipe(v.array(FilterScalar), v.minLength(1), v.maxLength(1000)) }),
]);
const MAX_FILTER_DEPTH = 8;
const Node: v.GenericSchema<AttributeFilter> = v.union([
  Comparison,
  v.object({ type: v.picklist(['and', 'or']), filters: v.pipe(v.array(v.lazy(() => Node)), v.maxLength(64)) }),
]) as v.GenericSchema<AttributeFilter>;
const depth = (f: AttributeFilter): number => ('filters' in f ? 1 + Math.max(0, ...f.filters.map(depth)) : 1);

export const AttributeFilterSchema = v.pipe(
  Node,
  v.check((f) => depth(f) <= MAX_FILTER_DEPTH, `filters nest at most ${MAX_FILTER_DEPTH} deep`),
);
