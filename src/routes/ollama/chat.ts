/**
 * POST /api/chat and POST /api/generate: NDJSON stream by default, one object with `stream: false`.
 * An empty message list / prompt preloads the model (with keep_alive 0 it unloads). A client that
 * disconnects cancels the generation (the request's signal), which frees its inference slot.
 */
import { type Context, Hono } from 'hono';
import type * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { ndjsonResponse } from '../../http/ndjson.ts';
import { jsonBody } from '../../http/validate.ts';
import type { Logger } from '../../log.ts';
import { ChatBody, GenerateBody } from '../../schemas/ollama.ts';
import { type ChatService, fromOllamaOptions } from '../../services/chat/index.ts';
import { chatFinal, formatOf, generateFinal, logprobsOf, preloadAnswer, streamLines, thinkOf } from './chat-shapes.ts';

export function ollamaChatRoutes(chat: ChatService, log: Logger) {
  const app = new Hono<AppEnv>();
  const answer = (c: Context<AppEnv>, s: Awaited<ReturnType<ChatService['chat']>>, route: 'chat' | 'generate') =>
    ndjsonResponse(c, streamLines(s, route), { logError: log.error, requestId: c.get('requestId') });

  /** The fields chat and generate share, as the chat service takes them. */
  const shared = (b: v.InferOutput<typeof ChatBody> | v.InferOutput<typeof GenerateBody>, signal: AbortSignal) => ({
    model: b.model,
    think: thinkOf(b.think),
    format: formatOf(b.format),
    params: fromOllamaOptions(b.options),
    keepAlive: b.keep_alive,
    signal,
    logprobs: logprobsOf(b),
  });

  app.post('/chat', jsonBody(ChatBody), async (c) => {
    const b = c.req.valid('json');
    if (!b.messages?.length) return c.json(preloadAnswer(await chat.preload(b.model, b.keep_alive), 'chat'));
    const s = await chat.chat({ ...shared(b, c.req.raw.signal), messages: b.messages, tools: b.tools });
    if (b.stream === false) return c.json(chatFinal(await s.complete(), true));
    return answer(c, s, 'chat');
  });

  app.post('/generate', jsonBody(GenerateBody), async (c) => {
    const b = c.req.valid('json');
    if (!b.prompt && !b.images?.length) return c.json(preloadAnswer(await chat.preload(b.model, b.keep_alive), 'generate'));
    const messages = [...(b.system ? [{ role: 'system', content: b.system }] : []), {
      role: 'user',
      content: b.prompt ?? '',
      images: b.images,
    }];
    const s = await chat.chat({ ...shared(b, c.req.raw.signal), messages });
    if (b.stream === false) return c.json(generateFinal(await s.complete(), true));
    return answer(c, s, 'generate');
  });

  return app;
}
