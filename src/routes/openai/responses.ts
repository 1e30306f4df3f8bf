/**
 * Dialect A Responses API: POST /v1/responses (JSON, or SSE `event:`/`data:` frames with a monotonic
 * sequence_number, no [DONE]), POST /v1/responses/compact, GET/DELETE /v1/responses/{id},
 * GET /v1/responses/{id}/input_items, and WebSocket mode on GET /v1/responses. A client that disconnects from a stream aborts the generation.
 */
import type { AgentService } from '../../services/agents/agent-service.ts';
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { errorPayload } from '../../http/errors.ts';
import { streamBody } from '../../http/stream-body.ts';
import { jsonBody, validate } from '../../http/validate.ts';
import { CompactBody, parseResponsesBody, ResponsesBody, responsesWording } from '../../schemas/responses.ts';
import type { Logger } from '../../log.ts';
import { isWebSocketUpgrade } from '../../runtime/websocket.ts';
import { isServiceError, notFound, ServiceError } from '../../services/errors.ts';
import type { ResponsesService } from '../../services/responses/responses-service.ts';
import { responsesWebSocket } from './responses-ws.ts';

const encoder = new TextEncoder();
const frame = (e: unknown) => encoder.encode(`event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`);

const ItemsQuery = v.object({
  order: v.optional(v.picklist(['asc', 'desc']), 'desc'),
  after: v.optional(v.string()),
  limit: v.optional(v.pipe(v.string(), v.transform(Number), v.number(), v.integer(), v.minValue(1), v.maxValue(100)), '20'),
});

export function openaiResponsesRoutes(responses: ResponsesService, log: Logger, agents?: AgentService) {
  const app = new Hono<AppEnv>();
  app.post('/responses', jsonBody(ResponsesBody, responsesWording), async (c) => {
    const raw = c.req.valid('json');
    // an agent becomes plain response fields first (unknown name: 400), checked as the client's are
    const body = agents ? parseResponsesBody(await agents.applyToResponses(c.get('owner').id, raw)) : raw;
    const started = await responses.create(c.get('owner').id, body, { signal: c.req.raw.signal });
    if (!started.stream) return c.json(await responses.complete(started));
    const rid = c.get('requestId');
    const stream = await streamBody(started.events, {
      item: frame,
      error: (err) => {
        const e = isServiceError(err) ? err : new ServiceError(500, 'internal_error', `Internal server error (request id ${rid})`);
        if (!isServiceError(err)) log.error(`responses stream failed rid=${rid}`, err);
        const { error } = errorPayload(e, 'openai').body as { error: Record<string, unknown> };
        return frame({ type: 'error', sequence_number: -1, error, ...error });
      },
    });
    return c.body(stream, 200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    });
  });
  // WebSocket mode (responses-ws.ts); a plain GET has nothing to answer
  app.get('/responses', (c) => {
    if (!isWebSocketUpgrade(c.req.raw)) {
      throw notFound('GET /v1/responses answers only WebSocket upgrades (WebSocket mode); create responses with POST');
    }
    return responsesWebSocket(c, responses, log, agents);
  });
  app.post(
    '/responses/compact',
    jsonBody(CompactBody, responsesWording),
    async (c) => c.json(await responses.compact(c.get('owner').id, c.req.valid('json'))),
  );
  app.get('/responses/:id', async (c) => c.json(await responses.get(c.get('owner').id, c.req.param('id'))));
  app.delete('/responses/:id', async (c) => c.json(await responses.delete(c.get('owner').id, c.req.param('id'))));
  app.get('/responses/:id/input_items', async (c) => {
    const q = validate(ItemsQuery, c.req.query());
    return c.json(
      await responses.inputItems(c.get('owner').id, c.req.param('id'), { order: q.order, after: q.after, limit: Number(q.limit) }),
    );
  });
  return app;
}
