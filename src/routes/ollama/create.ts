/**
 * POST /api/create: a custom model from `from` and/or `files` (pushed blobs), with `quantize`, `system`,
 * `template`, `parameters`, `license`. NDJSON progress (quantization progress included), or one JSON
 * object with `stream: false`. Checks fail before the stream starts, with their status.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { lastOf, ndjsonResponse } from '../../http/ndjson.ts';
import { jsonBody } from '../../http/validate.ts';
import type { Logger } from '../../log.ts';
import { invalidArgument } from '../../services/errors.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import { modelField } from './models.ts';

const Create = v.object({
  model: v.optional(v.string()),
  name: v.optional(v.string()),
  from: v.optional(v.string()),
  files: v.optional(v.record(v.string(), v.string())),
  adapters: v.optional(v.record(v.string(), v.string())),
  quantize: v.optional(v.string()),
  system: v.optional(v.string()),
  template: v.optional(v.string()),
  parameters: v.optional(v.record(v.string(), v.unknown())),
  license: v.optional(v.union([v.string(), v.array(v.string())])),
  modelfile: v.optional(v.string()),
  stream: v.optional(v.boolean()),
});

export function ollamaCreateRoutes(models: ModelServices, log: Logger) {
  return new Hono<AppEnv>().post('/create', jsonBody(Create), async (c) => {
    const body = c.req.valid('json');
    if (body.modelfile !== undefined) {
      throw invalidArgument(
        'the "modelfile" field is not supported: send from, files, system, template, parameters and license as JSON fields',
        [{ field: 'modelfile', message: 'unsupported' }],
      );
    }
    const progress = await models.create({ ...body, name: modelField(body) });
    if (body.stream === false) return c.json((await lastOf(progress)) ?? { status: 'success' });
    return ndjsonResponse(c, progress, { logError: log.error, requestId: c.get('requestId') });
  });
}
