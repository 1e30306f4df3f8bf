/**
 * A router that hands Hono one handler per request. Hono calls a lone matched handler directly and returns
 * its Response as it is, synchronously when the handler answers synchronously; two or more go through its
 * compose, an async function per handler, whose promises (and, on Node, the slower answer path of
 * @hono/node-server for a promised Response) cost more than a small request's own work (`/api/version`,
 * `/health`). So the handlers a request matches (the middleware every request passes, then the route) are
 * run here as one, with compose's rules: in order, each may answer or call `next()`; an Error a handler
 * throws becomes the answer right there (`onError`), so the handlers before it still see a finished
 * response; a handler's own answer counts unless one was already set. A step that only passes on and a
 * route that answers at once add no promise: `next()` returns a promise only when something below was
 * asynchronous (`afterNext` runs a middleware's epilogue either way).
 *
 * Each matched handler's parameters are merged into one map, since with one handler Hono reads them from the
 * first entry; two handlers naming different segments alike keep Hono's own compose for that route.
 */
import type { Context, ErrorHandler, Next } from 'hono';
import type { H, RouterRoute } from 'hono/types';
import type { ParamIndexMap, Result, Router } from 'hono/router';

type Entry = [H, RouterRoute];
type Matched = Result<Entry>[0];

const isPromise = (r: unknown): r is Promise<unknown> => typeof (r as Promise<unknown> | undefined)?.then === 'function';

/**
 * Runs `after` once what `next()` returned has settled: at once when it was not a promise. Typed as Hono's
 * `Next` is, although under this router `next()` returns nothing when all below it answered synchronously.
 */
export function afterNext(r: Promise<void>, after: () => void): Promise<void> {
  return isPromise(r) ? r.then(after) : (after() as unknown as Promise<void>);
}

/** The handlers as one, run by compose's rules; `next` (Hono's not-found step) follows the last. */
function fuse(handlers: H[], onError: ErrorHandler): H {
  const settle = (c: Context, res: unknown) => {
    if (res && !c.finalized) c.res = res as Response;
  };
  const failed = (c: Context, err: unknown) => {
    if (!(err instanceof Error)) throw err;
    c.error = err;
    const answer = onError(err, c);
    if (!isPromise(answer)) c.res = answer;
    else return answer.then((r) => void (c.res = r));
  };
  const fused = (c: Context, outer: Next) => {
    // one `next` for the whole request, not one per handler: handlers run nested, each calling it at most
    // once, so the one to run next is always the one after the last started (/api/version, by wrk against the
    // closure per handler: ~0.1-0.2 µs a request less on Bun and Deno)
    let i = 0;
    // deno-lint-ignore no-explicit-any
    const next = (): any => {
      if (i === handlers.length) return outer();
      const h = handlers[i++] as (c: Context, next: Next) => unknown;
      let res;
      try {
        res = h(c, next);
      } catch (err) {
        return failed(c, err);
      }
      if (isPromise(res)) return res.then((r) => settle(c, r), (err) => failed(c, err));
      settle(c, res);
    };
    const r = next();
    return isPromise(r) ? r.then(() => (c.finalized ? c.res : undefined)) : c.finalized ? c.res : undefined;
  };
  return fused as H;
}

export class OneHandlerRouter implements Router<Entry> {
  readonly name: string;
  #fused = new WeakMap<Matched, Matched | null>();

  constructor(private inner: Router<Entry>, private onError: ErrorHandler) {
    this.name = `OneHandler(${inner.name})`;
  }

  add(method: string, path: string, handler: Entry): void {
    this.inner.add(method, path, handler);
  }

  match(method: string, path: string): Result<Entry> {
    const found = this.inner.match(method, path);
    const matched = found[0];
    if (matched.length < 2) return found;
    let one = this.#fused.get(matched);
    if (one === undefined) {
      one = this.#fuseMatched(matched);
      this.#fused.set(matched, one);
    }
    return one ? ([one, found[1]] as Result<Entry>) : found;
  }

  #fuseMatched(matched: Matched): Matched | null {
    const params: Record<string, unknown> = {};
    for (const [, p] of matched as [Entry, Record<string, unknown>][]) {
      for (const [k, v] of Object.entries(p)) {
        if (k in params && params[k] !== v) return null;
        params[k] = v;
      }
    }
    const handlers = (matched as [Entry, unknown][]).map(([[h]]) => h);
    const route = (matched as [Entry, unknown][]).at(-1)![0][1];
    return [[[fuse(handlers, this.onError), route], params as ParamIndexMap]] as Matched;
  }
}
