/**
 * /svc/v1/admin: sign-in and logout are open; every other admin route needs the admin role (an admin
 * key, or an area ticket from the console), checked once here.
 */
import { Hono } from 'hono';
import type { Deps } from '../../deps.ts';
import { requireAdmin } from '../../http/auth.ts';
import type { AppEnv } from '../../http/context.ts';
import { adminConsoleRoutes, adminSignInRoutes } from './admin-console.ts';
import { adminJobRoutes } from './admin-jobs.ts';
import { adminKeyRoutes } from './admin-keys.ts';
import { adminMemoryRoutes } from './admin-memory.ts';
import { adminSettingsRoutes } from './admin-settings.ts';
import { searchKeyAccessRoutes } from './search/admin.ts';

export function adminRoutes(deps: Deps) {
  const app = new Hono<AppEnv>();
  app.route('/', adminSignInRoutes(deps.adminConsole));
  app.use('*', requireAdmin());
  app.route('/', adminKeyRoutes(deps.keys, deps.search.resources));
  app.route('/', searchKeyAccessRoutes(deps.search, deps.keys));
  app.route('/', adminJobRoutes(deps.runner));
  app.route('/', adminSettingsRoutes(deps.adminSettings));
  app.route('/', adminMemoryRoutes(deps.engine));
  app.route('/', adminConsoleRoutes(deps.adminConsole));
  return app;
}
