/**
 * POST /api/chat and POST /api/generate: NDJSON stream by default, one object with `stream: false`.
 * An empty message list / prompt preloads the model (with keep_alive 0 it unloads). A client that
 * disconnects cancels the generation (the request's signal), which frees its inference slot.
 */
import { type Context, Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { ndjsonResponse } from '../../http/ndjson.ts';
import { jsonBody } from '../../http/validate.ts';
import type { Logger } from '../../log.ts';
import { type ChatService, fromOllamaOptions } from '../../services/chat/index.ts';
import { invalidArgument } from '../../services/errors.ts';
import {
  chatFinal,
  Format,
  formatOf,
  generateFinal,
  Images,
  KeepAlive,
  logprobsOf,
  Options,
  preloadAnswer,
  streamLines,
  Think,
  thinkOf,
} from './chat-shapes.ts';

const Message = v.looseObject({
  role: v.string(),
  content: v.optional(v.nullable(v.string())),
  images: Images,
  tool_calls: v.optional(v.array(v.unknown())),
  thinking: v.optional(v.string()),
  tool_name: v.optional(v.string()),
});
const Common = {
  model: v.pipe(v.string(), v.minLength(1, 'model is required')),
  format: Format,
  options: Options,
  stream: v.optional(v.boolean()),
  keep_alive: KeepAlive,
  think: Think,
  logprobs: v.optional(v.boolean()),
  top_logprobs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(20))),
};
const Chat = v.looseObject({ ...Common, messages: v.optional(v.array(Message)), tools: v.optional(v.array(v.unknown())) });
const Generate = v.looseObject({ ...Common, prompt: v.optional(v.string()), system: v.optional(v.string()), images: Images });

/** Generate fields this server does not implement: refused by name rather than misinterpreted. */
function refuseGenerateFields(b: Record<string, unknown>) {
  const used = (k: string) => {
    const x = b[k];
    return x !== undefined && x !== null && x !== false && x !== '' && !(Array.isArray(x) && x.length === 0);
  };
  for (const k of ['raw', 'suffix', 'template', 'context']) {
    if (used(k)) throw invalidArgument(`${k} is not supported by this server's /api/generate`, [{ field: k, message: 'not supported' }]);
  }
}

export function ollamaChatRoutes(chat: ChatService, log: Logger) {
  const app = new Hono<AppEnv>();
  const answer = (c: Context<AppEnv>, s: Awaited<ReturnType<ChatService['chat']>>, route: 'chat' | 'generate') =>
    ndjsonResponse(c, streamLines(s, route), { logError: log.error, requestId: c.get('requestId') });

  app.post('/chat', jsonBody(Chat), async (c) => {
    const b = c.req.valid('json');
    if (!b.messages?.length) return c.json(preloadAnswer(await chat.preload(b.model, b.keep_alive), 'chat'));
    const s = await chat.chat({
      model: b.model,
      messages: b.messages,
      tools: b.tools,
      think: thinkOf(b.think),
      format: formatOf(b.format),
      params: fromOllamaOptions(b.options),
      keepAlive: b.keep_alive,
      signal: c.req.raw.signal,
      logprobs: logprobsOf(b),
    });
    if (b.stream === false) return c.json(chatFinal(await s.complete(), true));
    return answer(c, s, 'chat');
  });

  app.post('/generate', jsonBody(Generate), async (c) => {
    const b = c.req.valid('json');
    refuseGenerateFields(b);
    if (!b.prompt && !b.images?.length) return c.json(preloadAnswer(await chat.preload(b.model, b.keep_alive), 'generate'));
    const messages = [...(b.system ? [{ role: 'system', content: b.system }] : []), {
      role: 'user',
      content: b.prompt ?? '',
      images: b.images,
    }];
    const s = await chat.chat({
      model: b.model,
      messages,
      think: thinkOf(b.think),
      format: formatOf(b.format),
      params: fromOllamaOptions(b.options),
      keepAlive: b.keep_alive,
      signal: c.req.raw.signal,
      logprobs: logprobsOf(b),
    });
    if (b.stream === false) return c.json(generateFinal(await s.complete(), true));
    return answer(c, s, 'generate');
  });

  return app;
}
