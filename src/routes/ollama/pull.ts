/**
 * POST /api/pull: NDJSON progress `{status, digest, total, completed}` ending with `{status:"success"}`,
 * or with `stream: false` the terminal object once done. The download belongs to the server: a client
 * that disconnects only stops reading.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { ndjsonResponse } from '../../http/ndjson.ts';
import { jsonBody } from '../../http/validate.ts';
import { PullBody } from '../../schemas/ollama.ts';
import type { Logger } from '../../log.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import { modelField } from './models.ts';

export function ollamaPullRoutes(models: ModelServices, log: Logger) {
  return new Hono<AppEnv>().post('/pull', jsonBody(PullBody), async (c) => {
    const body = c.req.valid('json');
    const handle = await models.pull(modelField(body));
    if (body.stream === false) {
      await handle.done;
      return c.json({ status: 'success' });
    }
    return ndjsonResponse(c, handle.progress(), { logError: log.error, requestId: c.get('requestId') });
  });
}
