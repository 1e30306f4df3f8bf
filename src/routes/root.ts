/** Liveness: GET /health, and HEAD / GET / answering like Ollama's probe for non-browser clients. */
import { Hono } from 'hono';
import type { AppEnv } from '../http/context.ts';
import { VERSION } from '../version.ts';

export function rootRoutes(nodeTag: string, hasIndexPage: boolean) {
  const app = new Hono<AppEnv>();
  app.get('/health', (c) => c.json({ status: 'ok', version: VERSION, node: nodeTag }));
  // Ollama clients probe `/` for a plain 200; browsers asking for HTML get the index page (static files).
  app.on(['GET', 'HEAD'], '/', async (c, next) => {
    if (hasIndexPage && (c.req.header('accept') ?? '').includes('text/html')) return next();
    return c.text(c.req.method === 'HEAD' ? '' : 'svc is running');
  });
  return app;
}
