/** Field schemas the dialect schemas share: ranges with the dialects' wording, refusals by name, string-or-list fields. */
import * as v from 'valibot';

export const present = (x: unknown) => x !== undefined && x !== null;
export const isPlainObject = (x: unknown): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x);

/** A field this server does not serve: refused by name, with `message`, when `used` says the value asks for it. */
export const refused = (used: (x: unknown) => boolean, message: string) => v.optional(v.custom<unknown>((x) => !used(x), message));

/** A number in [lo, hi] (null = absent). */
export const ranged = (lo: number, hi: number, message = `must be a number from ${lo} to ${hi}`) =>
  v.nullish(v.pipe(v.number(message), v.finite(message), v.minValue(lo, message), v.maxValue(hi, message)));

/** A whole number in [lo, hi] (null = absent). */
export const rangedInteger = (lo: number, hi: number, message = `must be a number from ${lo} to ${hi}`, notWhole = 'must be an integer') =>
  v.nullish(v.pipe(v.number(message), v.finite(message), v.minValue(lo, message), v.maxValue(hi, message), v.integer(notWhole)));

/**
 * A string, or an array of `item`: the array's items are checked one by one, so an issue names the item
 * (`messages.0.content.1.type`) instead of the whole field.
 */
export const stringOr = <S extends v.GenericSchema>(item: S, message: string) =>
  v.lazy((x) => (typeof x === 'string' ? v.string() : v.array(item, message)));

/** A value that is never accepted, refused with `message` (a function of the value where it names it). */
export const never = (message: v.ErrorMessage<v.CustomIssue>) => v.custom<never>(() => false, message);
