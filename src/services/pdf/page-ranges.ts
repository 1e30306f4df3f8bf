/**
 * Page selection as callers write it: 1-based numbers, either an array or a string like "1-3,5,8-"
 * ("8-" = to the end, "last" = the last page, "all" or undefined = every page).
 * Returns 0-based indices in the order given; an index past the last page is 400 invalid_argument.
 */
import { invalidArgument } from '../errors.ts';

export type PageSelection = string | number[] | undefined;

export function resolvePages(sel: PageSelection, pageCount: number, field = 'pages'): number[] {
  if (sel === undefined || sel === 'all' || (typeof sel === 'string' && sel.trim() === '')) return [...Array(pageCount).keys()];
  const out: number[] = [];
  const check = (n: number) => {
    if (!Number.isInteger(n) || n < 1) throw invalidArgument(`${field}: page numbers start at 1 (got ${n}).`);
    if (n > pageCount) throw invalidArgument(`${field}: page ${n} is past the last page (${pageCount}).`);
    return n - 1;
  };
  if (Array.isArray(sel)) {
    for (const n of sel) out.push(check(n));
    return out;
  }
  const num = (s: string) => (s.trim().toLowerCase() === 'last' ? pageCount : Number(s));
  for (const part of sel.split(',')) {
    const m = /^\s*([0-9]+|last)?\s*(-)?\s*([0-9]+|last)?\s*$/i.exec(part);
    if (!m || (!m[1] && !m[3])) throw invalidArgument(`${field}: cannot read "${part}" (use e.g. "1-3,5,8-").`);
    const from = m[1] ? num(m[1]) : 1;
    const to = m[2] ? (m[3] ? num(m[3]) : pageCount) : from;
    check(from);
    check(to);
    const step = to >= from ? 1 : -1;
    for (let n = from; n !== to + step; n += step) out.push(n - 1);
  }
  return out;
}
