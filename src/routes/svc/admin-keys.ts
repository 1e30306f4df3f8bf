/**
 * /svc/v1/admin/keys: create (token shown once, with the key's search reach), list, revoke. Admin role
 * required. A new key's search access preselects the default cluster unless `search` says otherwise.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import type { KeyService } from '../../services/keys/api-keys.ts';
import type { SearchResources } from '../../services/search/resources.ts';
import { SearchAccessSchema } from './search/admin.ts';

const CreateKey = v.object({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'name must not be empty'), v.maxLength(200)),
  role: v.optional(v.picklist(['admin', 'user'])),
  search: v.optional(SearchAccessSchema),
});

export function adminKeyRoutes(keys: KeyService, search?: SearchResources) {
  const app = new Hono<AppEnv>();
  app.post('/keys', jsonBody(CreateKey), async (c) => {
    const b = c.req.valid('json');
    if (!search) return c.json(await keys.create(b), 201);
    // an unknown cluster is refused before the key exists
    if (b.search) await search.requireCluster(b.search.cluster);
    const k = await keys.create(b);
    const owner = { id: k.id, role: k.role, keyId: k.id, name: k.name };
    await search.setAccess(
      k.id,
      b.search === undefined ? 'default' : b.search?.cluster ?? null,
      (b.search?.grants ?? []).map((g) => ({ tenant: g.tenant, collection: g.collection ?? null, access: g.access })),
    );
    return c.json({ ...k, search: await search.reachOf(owner) }, 201);
  });
  app.get('/keys', async (c) => c.json({ object: 'list', data: await keys.list() }));
  app.delete('/keys/:id', async (c) => c.json(await keys.revoke(c.req.param('id'))));
  return app;
}
