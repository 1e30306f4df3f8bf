/**
 * HEAD /api/blobs/{digest}: 200 when stored, 404 when not. POST /api/blobs/{digest}: the raw body is
 * streamed to disk and hashed while stored; 201, 400 when its SHA-256 differs (nothing is kept), 413 above
 * the maximum upload size.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { limitedChunks, maxBytesOf } from '../../http/body-limit.ts';
import { ServiceError } from '../../services/errors.ts';
import type { ModelServices } from '../../services/models/model-services.ts';

export function ollamaBlobRoutes(models: ModelServices) {
  const app = new Hono<AppEnv>();
  // Hono routes HEAD through the GET handler; a plain GET is not part of the API.
  app.get('/blobs/:digest', async (c) => {
    if (c.req.method !== 'HEAD') throw new ServiceError(404, 'not_found', `route ${c.req.method} ${c.req.path} not found`);
    const digest = c.req.param('digest');
    return c.body(null, (await models.blobs.has(digest)) ? 200 : 404);
  });
  app.post('/blobs/:digest', async (c) => {
    const digest = c.req.param('digest');
    models.blobs.path(digest); // 400 for a malformed digest before reading the body
    await models.blobs.put(digest, limitedChunks(c.req.raw.body, maxBytesOf(c)));
    return c.body(null, 201);
  });
  return app;
}
