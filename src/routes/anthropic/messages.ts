/**
 * The Anthropic Messages gateway: POST /v1/messages (one `message`, or the typed SSE events) and
 * POST /v1/messages/count_tokens. Bodies are validated by their schemas (src/schemas/anthropic.ts);
 * planning and shaping live in the chat service's Anthropic module; errors answer in Anthropic's envelope
 * (the family of these paths). A client that disconnects aborts the generation, which frees its slot.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { namedSseResponse } from '../../http/sse.ts';
import { jsonBody } from '../../http/validate.ts';
import type { Logger } from '../../log.ts';
import { anthropicWording, CountTokensBody, MessagesBody } from '../../schemas/anthropic.ts';
import { countMessageTokens, createMessage, messageEvents, planMessages } from '../../services/chat/anthropic-messages.ts';
import type { ChatService } from '../../services/chat/chat-service.ts';

export function anthropicMessageRoutes(chat: ChatService, log: Logger) {
  const app = new Hono<AppEnv>();
  app.post('/messages', jsonBody(MessagesBody, anthropicWording), async (c) => {
    const plan = planMessages(c.req.valid('json'), c.req.raw.signal);
    if (!plan.stream) return c.json(await createMessage(chat, plan));
    const s = await chat.chat(plan.request);
    return namedSseResponse(c, messageEvents(s, plan), { logError: log.error, requestId: c.get('requestId') });
  });
  app.post(
    '/messages/count_tokens',
    jsonBody(CountTokensBody, anthropicWording),
    async (c) => c.json(await countMessageTokens(chat, c.req.valid('json'), c.req.raw.signal)),
  );
  return app;
}
