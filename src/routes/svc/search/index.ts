/** The search routes (docs/api/search.md): under /svc/v1 administration, data and rerank; under /v1 the de facto rerank. */
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/context.ts';
import type { Deps } from '../../../deps.ts';
import { searchAdminRoutes } from './admin.ts';
import { searchDataRoutes } from './data.ts';
import { rerankRoutes, v1RerankRoutes } from './rerank.ts';

export function searchRoutes(deps: Deps) {
  const app = new Hono<AppEnv>();
  app.route('/', searchAdminRoutes(deps.search));
  app.route('/', searchDataRoutes(deps.search, deps.runner, deps.files));
  app.route('/', rerankRoutes(deps.search.reranker, deps.runner));
  return app;
}

export const openaiRerankRoutes = (deps: Deps) => v1RerankRoutes(deps.search.reranker);
