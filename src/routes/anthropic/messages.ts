/**
 * The Anthropic Messages gateway: POST /v1/messages (one `message`, or the typed SSE events) and
 * POST /v1/messages/count_tokens. Planning and shaping live in the chat service's Anthropic module;
 * errors answer in Anthropic's envelope (the family of these paths). A client that disconnects aborts
 * the generation, which frees its slot.
 */
import { Hono } from 'hono';
import type { Context } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { namedSseResponse } from '../../http/sse.ts';
import { readJsonBody } from '../../http/validate.ts';
import type { Logger } from '../../log.ts';
import { countMessageTokens, createMessage, messageEvents, planMessages } from '../../services/chat/anthropic-messages.ts';
import type { ChatService } from '../../services/chat/chat-service.ts';
import { ServiceError } from '../../services/errors.ts';

async function objectBody(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  const body = await readJsonBody(c);
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new ServiceError(400, 'invalid_request', 'the body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

export function anthropicMessageRoutes(chat: ChatService, log: Logger) {
  const app = new Hono<AppEnv>();
  app.post('/messages', async (c) => {
    const plan = planMessages(await objectBody(c), c.req.raw.signal);
    if (!plan.stream) return c.json(await createMessage(chat, plan));
    const s = await chat.chat(plan.request);
    return namedSseResponse(c, messageEvents(s, plan), { logError: log.error, requestId: c.get('requestId') });
  });
  app.post('/messages/count_tokens', async (c) => c.json(await countMessageTokens(chat, await objectBody(c), c.req.raw.signal)));
  return app;
}
