/**
 * The option fields the native task routes (PDF, image, document, text, media) name the same way, as valibot
 * schemas. Multipart fields arrive as strings, or parsed when they look like JSON numbers or booleans.
 */
import * as v from 'valibot';

/** A string option; multipart fields that look like JSON numbers/booleans arrive parsed, so take them back as text. */
export const text = v.pipe(v.union([v.string(), v.number(), v.boolean()]), v.transform(String));
/** 1-based page selection: "1-3,5,8-", "all", "last", a page number, or an array of page numbers. */
export const pages = v.union([
  v.string(),
  v.pipe(v.number(), v.integer(), v.transform((n) => [n])),
  v.array(v.pipe(v.number(), v.integer())),
]);
/** One or several strings (a single multipart field arrives as a string, a repeated one as an array). */
export const strings = v.pipe(v.union([text, v.array(text)]), v.transform((x) => (Array.isArray(x) ? x : [x])));
export const delivery = v.optional(v.picklist(['inline', 'file_id']), 'inline');
export const password = v.optional(text);
/** An integer from `min` to `max`. */
export const int = (min: number, max: number) => v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));
/** One of `values`, compared case-insensitively (`json` = `Json`) and answered in its listed spelling; `def` when absent. */
export const oneOf = <T extends string>(values: readonly T[], def: T) =>
  v.optional(v.pipe(v.string(), v.transform((s) => values.find((x) => x.toLowerCase() === s.toLowerCase()) ?? s), v.picklist(values)), def);
