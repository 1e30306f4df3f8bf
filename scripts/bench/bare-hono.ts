// The peer for the version benchmark: a minimal Hono app with one route doing the work svc is required to
// do on every request (read `Authorization`, set `X-Svc-Node`), served by the same runtime adapter.
// With `features` as its second argument it also does what svc adds to every request, with svc's own code and
// as svc runs it: the request id header and the access line (src/http/request-meta.ts, at SVC_LOG_LEVEL,
// default info) and CORS's `Vary` (src/http/cors.ts), its handlers run as one (src/http/one-handler-router.ts).
// It shows how much of svc's extra time per request those features take by themselves.
import { Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { cors } from '../../src/http/cors.ts';
import { OneHandlerRouter } from '../../src/http/one-handler-router.ts';
import { requestMeta } from '../../src/http/request-meta.ts';
import { createLogger, type Level } from '../../src/log.ts';
import { serve } from '../../src/runtime/serve.ts';

const features = process.argv[3] === 'features';
const app = features ? new Hono({ router: new OneHandlerRouter(new RegExpRouter(), (err, c) => c.text(err.message, 500)) }) : new Hono();
if (features) {
  app.use('*', requestMeta('bench', createLogger((process.env.SVC_LOG_LEVEL ?? 'info') as Level)));
  app.use('*', cors([]));
}
app.get('/api/version', (c) => {
  if (c.req.header('authorization') === 'Bearer revoked') return c.json({ error: 'unauthorized' }, 401);
  if (!features) c.header('X-Svc-Node', 'bench'); // request-meta sets it with the features
  return c.json({ version: '2026.11.0' });
});
const s = await serve(app.fetch, { port: Number(process.argv[2] ?? 0), hostname: '127.0.0.1' });
console.error(`listening on http://127.0.0.1:${s.port}`);
