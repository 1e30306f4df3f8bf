/** GET/PATCH /svc/v1/admin/settings: run-time settings such as the Sync Timeout. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import type { AdminSettings } from '../../services/admin/settings.ts';

const Patch = v.object({
  sync_timeout_seconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(86_400))),
  default_embedding_model: v.optional(v.pipe(v.string(), v.maxLength(300))),
});

export function adminSettingsRoutes(settings: AdminSettings) {
  const app = new Hono<AppEnv>();
  app.get('/settings', async (c) => c.json(await settings.view()));
  app.on(['PATCH', 'PUT'], '/settings', jsonBody(Patch), async (c) => c.json(await settings.update(c.req.valid('json'))));
  return app;
}
