/**
 * POST /api/create: a custom model from `from` and/or `files` (pushed blobs), with `quantize`, `system`,
 * `template`, `parameters`, `license`. NDJSON progress (quantization progress included), or one JSON
 * object with `stream: false`. Checks fail before the stream starts, with their status.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { lastOf, ndjsonResponse } from '../../http/ndjson.ts';
import { jsonBody } from '../../http/validate.ts';
import { CreateBody } from '../../schemas/ollama.ts';
import type { Logger } from '../../log.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import { modelField } from './models.ts';

export function ollamaCreateRoutes(models: ModelServices, log: Logger) {
  return new Hono<AppEnv>().post('/create', jsonBody(CreateBody), async (c) => {
    const { modelfile: _refused, ...body } = c.req.valid('json');
    const progress = await models.create({ ...body, name: modelField(body) });
    if (body.stream === false) return c.json((await lastOf(progress)) ?? { status: 'success' });
    return ndjsonResponse(c, progress, { logError: log.error, requestId: c.get('requestId') });
  });
}
