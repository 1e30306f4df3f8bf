/** POST /v1/completions: raw-prompt completions, JSON or SSE chunks ending with [DONE]. */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { sseResponse } from '../../http/sse.ts';
import { jsonBody } from '../../http/validate.ts';
import { CompletionBody, openaiWording } from '../../schemas/openai.ts';
import type { Logger } from '../../log.ts';
import type { ChatService } from '../../services/chat/chat-service.ts';
import { completion, completionChunks, planCompletion } from '../../services/chat/openai-completions.ts';
import type { InferenceEngine } from '../../services/inference/engine.ts';

export function openaiCompletionRoutes(chat: ChatService, engine: InferenceEngine, log: Logger) {
  const app = new Hono<AppEnv>();
  app.post('/completions', jsonBody(CompletionBody, openaiWording), async (c) => {
    const plan = planCompletion(c.req.valid('json'));
    const signal = c.req.raw.signal;
    if (!plan.stream) return c.json(await completion(chat, engine, plan, signal));
    return sseResponse(c, await completionChunks(chat, engine, plan, signal), { logError: log.error, requestId: c.get('requestId') });
  });
  return app;
}
