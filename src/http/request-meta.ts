/**
 * Request id, X-Svc-Node on every response (errors and 404s included), and the one-line access log.
 * Where the runtime makes it cheaper (src/runtime/http-tuning.ts), the headers are prepared on the context
 * before the handler runs: every response built through the context carries them (routes, errors, streams
 * and static files all answer through `c`). Elsewhere they are set on the finished response.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { randomId } from '../ids.ts';
import type { Logger } from '../log.ts';
import { setHeadersAfterResponse } from '../runtime/http-tuning.ts';
import { afterNext } from './one-handler-router.ts';
import type { AppEnv } from './context.ts';

export function requestMeta(nodeTag: string, log: Logger): MiddlewareHandler<AppEnv> {
  // Unique per process: a random boot prefix and a counter (cheaper than random bytes per request). The
  // counter starts at 36^6, so it is written in 7 base-36 digits without padding (padStart is slow on Bun);
  // 12 characters in all.
  const boot = randomId(5);
  let seq = 36 ** 6;
  // Not async, and the access line written by a plain function: no promise of its own per request.
  const access = (c: Context<AppEnv>, status: number, started: number, rid: string) => {
    const owner = (c.get('owner') as { id?: string } | undefined)?.id ?? '-';
    log.access(`${c.req.method} ${c.req.path} ${status} ${(performance.now() - started).toFixed(1)}ms owner=${owner} rid=${rid}`);
  };
  return (c, next) => {
    const logging = log.level === 'debug' || log.level === 'info';
    const started = logging ? performance.now() : 0; // a clock read is an op call on Deno: only when logged
    const rid = boot + (seq++).toString(36);
    c.set('requestId', rid);
    if (!setHeadersAfterResponse) {
      c.header('X-Svc-Node', nodeTag);
      c.header('X-Request-Id', rid);
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
