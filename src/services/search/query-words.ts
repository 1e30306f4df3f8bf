/** The distinct words of a query (letters and digits), lower-cased, in order, at most `max`: what full text matches. */
export const queryWords = (query: string, max: number): string[] =>
  [...new Set((query.match(/[\p{L}\p{N}]+/gu) ?? []).map((w) => w.toLowerCase()))].slice(0, max);
