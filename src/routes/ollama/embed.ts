/**
 * POST /api/embed (one vector per input; over-long inputs chunked and mean-pooled; `truncate` accepted
 * and ignored; an empty input list loads the model) and POST /api/embeddings (legacy: one prompt, one
 * vector; an empty prompt gives an empty vector).
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import type { ChatService } from '../../services/chat/index.ts';
import { invalidArgument } from '../../services/errors.ts';
import { truncateEmbedding } from '../../services/chat/index.ts';
import { KeepAlive, Options } from './chat-shapes.ts';

const model = v.pipe(v.string(), v.minLength(1, 'model is required'));
const Embed = v.looseObject({
  model,
  input: v.optional(v.union([v.string(), v.array(v.string())])),
  truncate: v.optional(v.boolean()),
  keep_alive: KeepAlive,
  options: Options,
  dimensions: v.optional(v.number()),
});
const Embeddings = v.looseObject({ model, prompt: v.optional(v.string()), keep_alive: KeepAlive, options: Options });

export function ollamaEmbedRoutes(chat: ChatService) {
  const app = new Hono<AppEnv>();

  app.post('/embed', jsonBody(Embed), async (c) => {
    const b = c.req.valid('json');
    const dims = b.dimensions;
    if (dims !== undefined && (!Number.isInteger(dims) || dims < 1)) {
      throw invalidArgument('dimensions must be a positive integer', [{ field: 'dimensions', message: 'must be a positive integer' }]);
    }
    const inputs = b.input === undefined ? [] : typeof b.input === 'string' ? [b.input] : b.input;
    const r = await chat.embed(b.model, inputs, { keepAlive: b.keep_alive, signal: c.req.raw.signal });
    return c.json({
      model: r.model,
      embeddings: dims === undefined ? r.vectors : r.vectors.map((vec) => truncateEmbedding(vec, dims)),
      total_duration: r.totalNs,
      load_duration: r.loadNs,
      prompt_eval_count: r.promptTokens,
    });
  });

  app.post('/embeddings', jsonBody(Embeddings), async (c) => {
    const b = c.req.valid('json');
    if (!b.prompt) {
      await chat.resolve(b.model, 'embedding'); // 404 / 400 still apply
      return c.json({ embedding: [] });
    }
    const r = await chat.embed(b.model, [b.prompt], { keepAlive: b.keep_alive, signal: c.req.raw.signal });
    return c.json({ embedding: r.vectors[0] });
  });

  return app;
}
