// The peer for the version benchmark: a minimal Hono app with one route doing the work svc is required to
// do on every request (read `Authorization`, set `X-Svc-Node`), served by the same runtime adapter.
import { Hono } from 'hono';
import { serve } from '../../src/runtime/serve.ts';

const app = new Hono();
app.get('/api/version', (c) => {
  if (c.req.header('authorization') === 'Bearer revoked') return c.json({ error: 'unauthorized' }, 401);
  c.header('X-Svc-Node', 'bench');
  return c.json({ version: '2026.11.0' });
});
const s = await serve(app.fetch, { port: Number(process.argv[2] ?? 0), hostname: '127.0.0.1' });
console.error(`listening on http://127.0.0.1:${s.port}`);
