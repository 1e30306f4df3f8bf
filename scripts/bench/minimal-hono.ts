// The peer of the version benchmark: a minimal Hono app with one route doing the work svc is required to do on
// every request (read `Authorization`, set `X-Svc-Node`). `withFeatures` also does what svc adds to every request,
// with svc's own code and as svc runs it: the request id header and the access line (src/http/request-meta.ts,
// at the logger's level) and CORS's `Vary` (src/http/cors.ts), its handlers run as one
// (src/http/one-handler-router.ts). Served by scripts/bench/bare-hono.ts; called in-process by version-parts.ts.
import { Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { cors } from '../../src/http/cors.ts';
import { OneHandlerRouter } from '../../src/http/one-handler-router.ts';
import { requestMeta } from '../../src/http/request-meta.ts';
import type { Logger } from '../../src/log.ts';

export function minimalApp(withFeatures?: Logger): Hono {
  const app = withFeatures
    ? new Hono({ router: new OneHandlerRouter(new RegExpRouter(), (err, c) => c.text(err.message, 500)) })
    : new Hono();
  if (withFeatures) {
    app.use('*', requestMeta('bench', withFeatures));
    app.use('*', cors([]));
  }
  app.get('/api/version', (c) => {
    if (c.req.header('authorization') === 'Bearer revoked') return c.json({ error: 'unauthorized' }, 401);
    if (!withFeatures) c.header('X-Svc-Node', 'bench'); // request-meta sets it with the features
    return c.json({ version: '2026.11.0' });
  });
  return app;
}
