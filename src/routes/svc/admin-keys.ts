/** /svc/v1/admin/keys: create (token shown once), list, revoke. Admin role required. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import type { KeyService } from '../../services/keys/api-keys.ts';

const CreateKey = v.object({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'name must not be empty'), v.maxLength(200)),
  role: v.optional(v.picklist(['admin', 'user'])),
});

export function adminKeyRoutes(keys: KeyService) {
  const app = new Hono<AppEnv>();
  app.post('/keys', jsonBody(CreateKey), async (c) => c.json(await keys.create(c.req.valid('json')), 201));
  app.get('/keys', async (c) => c.json({ object: 'list', data: await keys.list() }));
  app.delete('/keys/:id', async (c) => c.json(await keys.revoke(c.req.param('id'))));
  return app;
}
