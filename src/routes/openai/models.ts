/**
 * Dialect A model listing: GET /v1/models and GET /v1/models/{id} (ids may contain '/' and ':').
 * `owned_by` is `library` for catalog models and `unverified` for custom models (created, copied, or
 * imported from the hub). `created` is the time of the local copy (custom models: their creation time);
 * 0 for a catalog entry not downloaded yet.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { ServiceError } from '../../services/errors.ts';
import type { ListedModel } from '../../services/models/local.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import { nameKey } from '../../services/models/names.ts';
import type { CustomModelRecord } from '../../services/models/spec.ts';

const secs = (d: Date) => Math.floor(d.getTime() / 1000);

export const openaiModel = (m: ListedModel) => {
  const createdAt = (m.spec as Partial<CustomModelRecord>).created_at;
  const created = m.modified_at ? secs(m.modified_at) : createdAt ? secs(new Date(createdAt)) : 0;
  return { id: m.name, object: 'model' as const, created, owned_by: m.unverified ? 'unverified' : 'library' };
};

export function openaiModelRoutes(models: ModelServices) {
  const app = new Hono<AppEnv>();
  app.get('/models', async (c) => c.json({ object: 'list', data: (await models.list()).map(openaiModel) }));
  app.get('/models/:id{.+}', async (c) => {
    const id = c.req.param('id');
    let key: string | undefined;
    try {
      key = nameKey(id);
    } catch {
      key = undefined;
    }
    const all = await models.list();
    const found = key &&
      (all.find((m) => nameKey(m.name) === key) ??
        (models.catalog.resolve(id) && all.find((m) => m.name === models.catalog.resolve(id)!.name)));
    if (!found) throw new ServiceError(404, 'model_not_found', `The model '${id}' does not exist`);
    return c.json(openaiModel(found));
  });
  return app;
}
