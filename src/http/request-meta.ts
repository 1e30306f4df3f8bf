/**
 * Request id, X-Svc-Node on every response (errors and 404s included), and the one-line access log.
 * Where the runtime makes it cheaper (src/runtime/http-tuning.ts), the headers are set before the handler
 * runs, on the runtime's response or prepared on the context: every response built through the context
 * carries them (routes, errors, streams and static files all answer through `c`). Elsewhere they are set on
 * the finished response.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { randomId } from '../ids.ts';
import type { Logger } from '../log.ts';
import { presetHeader, setHeadersAfterResponse } from '../runtime/http-tuning.ts';
import { afterNext } from './one-handler-router.ts';
import type { AppEnv } from './context.ts';

/**
 * Request ids, unique per process: a random boot prefix and a counter (cheaper than random bytes per
 * request), 12 base-36 characters. The counter's last two digits come from a table and the rest is
 * written once per 1,296 ids: `toString(36)` of a number per request cost ~0.1 µs.
 */
export function requestIds(): () => string {
  const pairs = Array.from({ length: 36 * 36 }, (_, i) => (i < 36 ? '0' : '') + i.toString(36));
  const boot = randomId(5);
  let high = 36 ** 4; // five digits without padding (padStart is slow on Bun)
  let prefix = '';
  let low = pairs.length;
  return () => {
    if (low === pairs.length) {
      prefix = boot + (high++).toString(36);
      low = 0;
    }
    return prefix + pairs[low++];
  };
}

export function requestMeta(nodeTag: string, log: Logger): MiddlewareHandler<AppEnv> {
  const nextId = requestIds();
  // Not async, and the access line written by a plain function: no promise of its own per request.
  const access = (c: Context<AppEnv>, status: number, started: number, rid: string) => {
    const owner = (c.get('owner') as { id?: string } | undefined)?.id ?? '-';
    log.access(c.req.method, c.req.url, status, Math.round((performance.now() - started) * 10), owner, rid);
  };
  return (c, next) => {
    const logging = log.level === 'debug' || log.level === 'info';
    const started = logging ? performance.now() : 0; // a clock read is an op call on Deno: only when logged
    const rid = nextId();
    c.set('requestId', rid);
    if (!setHeadersAfterResponse) {
      presetHeader(c, 'X-Svc-Node', nodeTag);
      presetHeader(c, 'X-Request-Id', rid);
      if (!logging) return next();
    }
    return afterNext(next(), () => {
      if (setHeadersAfterResponse) {
        c.res.headers.set('X-Svc-Node', nodeTag);
        c.res.headers.set('X-Request-Id', rid);
      }
      if (!logging) return;
      const ended = c.get('streamEnded');
      // A stream is logged when it ends: 499 when the client left before the end.
      if (ended && c.res.status === 200) void ended.then((how) => access(c, how === 'cancelled' ? 499 : 200, started, rid));
      else access(c, c.get('clientClosed') ? 499 : c.res.status, started, rid);
    });
  };
}
