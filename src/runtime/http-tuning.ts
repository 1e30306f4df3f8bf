/**
 * How to add headers to every response most cheaply, measured per runtime (scripts/bench/version.mjs and an
 * in-process loop): on Deno, setting them on the finished Response costs ~0.5 µs while preparing them on the
 * context costs ~5 µs; on Bun, preparing them on the context is faster. On Node, @hono/node-server hands each
 * request the Node response it will write to (`c.env.outgoing`): a header set there is written with every
 * answer, raw Responses included, and the answer itself can keep a plain header object. Prepared on the
 * context, the same headers cost an undici `Headers` per request, built and then read back into an object
 * (~1.3 µs of a ~17 µs request, measured with the version benchmark).
 */
import type { Context } from 'hono';
import { runtimeName } from './env.ts';

export const setHeadersAfterResponse = runtimeName === 'deno';

interface NodeBindings {
  incoming?: { headers: Record<string, string | string[] | undefined> };
  outgoing?: { setHeader(name: string, value: string): unknown };
}

/** The Node request and response behind this request: absent on other runtimes and under `app.request`. */
const nodeOf = (c: Context): NodeBindings | undefined => runtimeName === 'node' ? (c.env as NodeBindings | undefined) : undefined;

/**
 * Sets a header every answer to this request carries, before the handler runs (not on Deno: see
 * `setHeadersAfterResponse`). True when it was set on the runtime's own response, which raw Responses carry
 * too; false when it was prepared on the context, which only responses built through `c` carry.
 */
export function presetHeader(c: Context, name: string, value: string): boolean {
  const out = nodeOf(c)?.outgoing;
  if (out) {
    out.setHeader(name, value);
    return true;
  }
  c.header(name, value);
  return false;
}

/**
 * A request header by its lower-case name, for a header Node joins when it is repeated (as `origin`; not
 * `authorization` or the others Node keeps once, nor cookies). On Node it is read from the object Node's
 * parser built: @hono/node-server's view of it checks and lowercases the name and checks the value on
 * every read.
 */
export function joinedHeader(c: Context, lowerName: string): string | undefined {
  const incoming = nodeOf(c)?.incoming;
  if (!incoming) return c.req.header(lowerName);
  const value = incoming.headers[lowerName];
  return typeof value === 'string' ? value : undefined;
}
