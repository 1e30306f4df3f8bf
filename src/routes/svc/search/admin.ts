/**
 * Search administration (admin keys): clusters, tenants, collections, and a key's search access
 * (docs/api/search.md). Deleting a resource removes everything below it.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import { requireAdmin } from '../../../http/auth.ts';
import type { AppEnv } from '../../../http/context.ts';
import { readJson } from '../../../http/validate.ts';
import type { KeyService } from '../../../services/keys/api-keys.ts';
import { notFound } from '../../../services/errors.ts';
import type { Search } from '../../../services/search/index.ts';

const name = v.pipe(v.string(), v.minLength(1), v.maxLength(63));
const CreateCluster = v.strictObject({
  id: name,
  kind: v.optional(v.picklist(['libsql', 'postgres']), 'libsql'),
  url: v.pipe(v.string(), v.minLength(1), v.maxLength(2000)),
  auth_token: v.optional(v.pipe(v.string(), v.maxLength(4000))),
});
const CreateTenant = v.strictObject({ name });
const CreateCollection = v.strictObject({ name, embedding_model: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(200)))) });
export const GrantSchema = v.strictObject({
  tenant: name,
  collection: v.optional(v.nullable(name)),
  access: v.optional(v.picklist(['read', 'write']), 'read'),
});
/** A key's search access: `false`/null = none; otherwise a cluster (default: the default cluster) and grants. */
export const SearchAccessSchema = v.union([
  v.pipe(v.union([v.literal(false), v.null()]), v.transform(() => null)),
  v.strictObject({ cluster: v.optional(name, 'default'), grants: v.optional(v.pipe(v.array(GrantSchema), v.maxLength(1000)), []) }),
]);
const PutAccess = v.strictObject({ search: SearchAccessSchema });

export function searchAdminRoutes(search: Search) {
  const r = search.resources;
  const app = new Hono<AppEnv>();
  app.use('/search/clusters', requireAdmin());
  app.use('/search/clusters/*', requireAdmin());

  app.post('/search/clusters', async (c) => {
    const b = await readJson(c, CreateCluster);
    return c.json(await r.createCluster(b.id, b.kind, b.url, b.auth_token ?? null), 201);
  });
  app.get('/search/clusters', async (c) => c.json({ object: 'list', data: await r.listClusters() }));
  app.get('/search/clusters/:cluster', async (c) => c.json(await r.getCluster(c.req.param('cluster'))));
  app.delete('/search/clusters/:cluster', async (c) => c.json(await r.deleteCluster(c.req.param('cluster'))));

  app.post(
    '/search/clusters/:cluster/tenants',
    async (c) => c.json(await r.createTenant(c.req.param('cluster'), (await readJson(c, CreateTenant)).name), 201),
  );
  app.get('/search/clusters/:cluster/tenants', async (c) => c.json({ object: 'list', data: await r.listTenants(c.req.param('cluster')) }));
  app.get(
    '/search/clusters/:cluster/tenants/:tenant',
    async (c) => c.json(await r.getTenant(c.req.param('cluster'), c.req.param('tenant'))),
  );
  app.delete(
    '/search/clusters/:cluster/tenants/:tenant',
    async (c) => c.json(await r.deleteTenant(c.req.param('cluster'), c.req.param('tenant'))),
  );

  const base = '/search/clusters/:cluster/tenants/:tenant/collections';
  app.post(base, async (c) => {
    const b = await readJson(c, CreateCollection);
    return c.json(await r.createCollection(c.req.param('cluster'), c.req.param('tenant'), b.name, b.embedding_model ?? null), 201);
  });
  app.get(base, async (c) => {
    const cluster = c.req.param('cluster');
    return c.json({ object: 'list', data: await r.withCounts(cluster, await r.listCollections(cluster, c.req.param('tenant'))) });
  });
  app.get(`${base}/:collection`, async (c) => {
    const cluster = c.req.param('cluster');
    const [col] = await r.withCounts(cluster, [await r.getCollection(cluster, c.req.param('tenant'), c.req.param('collection'))]);
    return c.json(col);
  });
  app.delete(
    `${base}/:collection`,
    async (c) => c.json(await r.deleteCollection(c.req.param('cluster'), c.req.param('tenant'), c.req.param('collection'))),
  );

  return app;
}

/** A key's search access, under the admin sub-app (/svc/v1/admin, admin role checked there). */
export function searchKeyAccessRoutes(search: Search, keys: KeyService) {
  const r = search.resources;
  const app = new Hono<AppEnv>();
  const keyOwner = async (id: string) => {
    const k = (await keys.list()).find((x) => x.id === id && x.revoked_at === null);
    if (!k) throw notFound(`API key '${id}' not found`);
    return { id: k.id, role: k.role, keyId: k.id, name: k.name };
  };
  app.get(
    '/keys/:id/search',
    async (c) => c.json({ key_id: c.req.param('id'), search: await r.reachOf(await keyOwner(c.req.param('id'))) }),
  );
  app.put('/keys/:id/search', async (c) => {
    const owner = await keyOwner(c.req.param('id'));
    const b = await readJson(c, PutAccess);
    await r.setAccess(
      owner.id,
      b.search?.cluster ?? null,
      (b.search?.grants ?? []).map((g) => ({ tenant: g.tenant, collection: g.collection ?? null, access: g.access })),
    );
    return c.json({ key_id: owner.id, search: await r.reachOf(owner) });
  });
  return app;
}
