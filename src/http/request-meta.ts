/** Request id, X-Svc-Node on every response (errors and 404s included), and the one-line access log. */
import type { MiddlewareHandler } from 'hono';
import type { Logger } from '../log.ts';
import type { AppEnv } from './context.ts';

const hex = () => Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('');

export function requestMeta(nodeTag: string, log: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const rid = hex();
    c.set('requestId', rid);
    await next();
    c.res.headers.set('X-Svc-Node', nodeTag);
    c.res.headers.set('X-Request-Id', rid);
    if (log.level === 'debug' || log.level === 'info') {
      const status = c.get('clientClosed' as never) ? 499 : c.res.status;
      const owner = (c.get('owner') as { id?: string } | undefined)?.id ?? '-';
      log.info(`${c.req.method} ${c.req.path} ${status} ${(performance.now() - started).toFixed(1)}ms owner=${owner} rid=${rid}`);
    }
  };
}
