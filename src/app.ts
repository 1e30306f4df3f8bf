/** createApp(deps): middleware and the three route families mounted. */
import { Hono } from 'hono';
import type { Config } from './config.ts';
import { auth } from './http/auth.ts';
import { bodyLimit } from './http/body-limit.ts';
import type { AppEnv } from './http/context.ts';
import { toErrorResponse } from './http/errors.ts';
import { requestMeta } from './http/request-meta.ts';
import { findPublicDir, serveStatic } from './http/static.ts';
import type { Logger } from './log.ts';
import { rootRoutes } from './routes/root.ts';
import { versionRoutes } from './routes/ollama/version.ts';
import { adminKeyRoutes } from './routes/svc/admin-keys.ts';
import { ServiceError } from './services/errors.ts';
import type { KeyService } from './services/keys/api-keys.ts';
import type { Db } from './store/schema.ts';

export interface AppDeps {
  config: Config;
  db: Db;
  nodeTag: string;
  keys: KeyService;
  log: Logger;
  /** Extra routes mounted before the 404 (tests register test-only tasks here). */
  extraRoutes?: (app: Hono<AppEnv>) => void;
}

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const { config, nodeTag, keys, log } = deps;
  const app = new Hono<AppEnv>();
  const publicDir = findPublicDir();

  app.use('*', requestMeta(nodeTag, log));
  app.use('*', auth(keys));
  app.use('*', bodyLimit(config.maxUploadBytes));

  app.route('/', rootRoutes(nodeTag, publicDir !== null));
  app.route('/', versionRoutes());
  app.route('/', adminKeyRoutes(keys));
  deps.extraRoutes?.(app);
  app.use('*', serveStatic(publicDir));

  app.notFound((c) => toErrorResponse(new ServiceError(404, 'not_found', `route ${c.req.method} ${c.req.path} not found`), c, log.error));
  app.onError((err, c) => toErrorResponse(err, c, (m, e) => log.error(m, e)));
  return app;
}
