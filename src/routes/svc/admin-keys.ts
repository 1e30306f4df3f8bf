/** /svc/v1/admin/keys: create (token shown once), list, revoke. Admin role required. */
import { Hono } from 'hono';
import * as v from 'valibot';
import { requireAdmin } from '../../http/auth.ts';
import type { AppEnv } from '../../http/context.ts';
import { readJson } from '../../http/validate.ts';
import type { KeyService } from '../../services/keys/api-keys.ts';

const CreateKey = v.object({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'name must not be empty'), v.maxLength(200)),
  role: v.optional(v.picklist(['admin', 'user'])),
});

export function adminKeyRoutes(keys: KeyService) {
  const app = new Hono<AppEnv>();
  app.use('/svc/v1/admin/keys', requireAdmin());
  app.use('/svc/v1/admin/keys/*', requireAdmin());
  app.post('/svc/v1/admin/keys', async (c) => c.json(await keys.create(await readJson(c, CreateKey)), 201));
  app.get('/svc/v1/admin/keys', async (c) => c.json({ object: 'list', data: await keys.list() }));
  app.delete('/svc/v1/admin/keys/:id', async (c) => c.json(await keys.revoke(c.req.param('id'))));
  return app;
}
