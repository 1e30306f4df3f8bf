/**
 * Metadata filters of search queries and deletes (docs/api/search.md): an object whose keys are metadata
 * fields and whose values are a scalar (equality) or an operator object (`eq`, `ne`, `in`, `gt`, `gte`,
 * `lt`, `lte`); every condition must hold. Compiled to SQL by each cluster kind (store/search/).
 */
import * as v from 'valibot';

export type Scalar = string | number | boolean;
export interface FieldCondition {
  eq?: Scalar;
  ne?: Scalar;
  in?: Scalar[];
  gt?: number | string;
  gte?: number | string;
  lt?: number | string;
  lte?: number | string;
}
export type Filter = Record<string, Scalar | FieldCondition>;

const ScalarSchema = v.union([v.string(), v.number(), v.boolean()]);
const Bound = v.union([v.number(), v.string()]);
export const FilterSchema = v.pipe(
  v.record(
    v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/, 'a filter field is a metadata name: letters, digits, _ . - (up to 64)')),
    v.union([
      ScalarSchema,
      v.strictObject({
        eq: v.optional(ScalarSchema),
        ne: v.optional(ScalarSchema),
        in: v.optional(v.pipe(v.array(ScalarSchema), v.minLength(1), v.maxLength(1000))),
        gt: v.optional(Bound),
        gte: v.optional(Bound),
        lt: v.optional(Bound),
        lte: v.optional(Bound),
      }),
    ]),
  ),
  v.check((f) => Object.keys(f).length <= 32, 'at most 32 filter fields'),
);

/** The conditions as (field, operator, value) triples; a bare scalar is `eq`. */
export function conditions(f: Filter | undefined): { field: string; op: keyof FieldCondition; value: Scalar | Scalar[] }[] {
  const out: { field: string; op: keyof FieldCondition; value: Scalar | Scalar[] }[] = [];
  for (const [field, c] of Object.entries(f ?? {})) {
    if (typeof c !== 'object') {
      out.push({ field, op: 'eq', value: c });
      continue;
    }
    for (const [op, value] of Object.entries(c)) {
      if (value !== undefined) out.push({ field, op: op as keyof FieldCondition, value: value as Scalar });
    }
  }
  return out;
}

/** Evaluates a filter on one metadata object (the same rules as the SQL forms). */
export function matches(f: Filter | undefined, meta: Record<string, unknown>): boolean {
  return conditions(f).every(({ field, op, value }) => {
    const x = meta[field];
    switch (op) {
      case 'eq':
        return x === value;
      case 'ne':
        return x !== value;
      case 'in':
        return (value as Scalar[]).includes(x as Scalar);
      default: {
        if (x === undefined || x === null || typeof x !== typeof value) return false;
        const a = x as number | string, b = value as number | string;
        return op === 'gt' ? a > b : op === 'gte' ? a >= b : op === 'lt' ? a < b : a <= b;
      }
    }
  });
}
