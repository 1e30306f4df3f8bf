/** The search routes: administration, data, rerank (docs/api/search.md). */
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/context.ts';
import type { Deps } from '../../../deps.ts';
import { searchAdminRoutes } from './admin.ts';
import { searchDataRoutes } from './data.ts';
import { rerankRoutes } from './rerank.ts';

export function searchRoutes(deps: Deps) {
  const app = new Hono<AppEnv>();
  app.route('/', searchAdminRoutes(deps.search, deps.keys));
  app.route('/', searchDataRoutes(deps.search, deps.runner, deps.files));
  app.route('/', rerankRoutes(deps.search.reranker, deps.runner));
  return app;
}
