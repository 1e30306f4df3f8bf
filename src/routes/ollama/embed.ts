/**
 * POST /api/embed (one vector per input; over-long inputs chunked and mean-pooled; `truncate` accepted
 * and ignored; an empty input list loads the model) and POST /api/embeddings (legacy: one prompt, one
 * vector; an empty prompt gives an empty vector).
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import { EmbedBody, EmbeddingsBody } from '../../schemas/ollama.ts';
import type { ChatService } from '../../services/chat/index.ts';
import { truncateEmbedding } from '../../services/chat/index.ts';

export function ollamaEmbedRoutes(chat: ChatService) {
  const app = new Hono<AppEnv>();

  app.post('/embed', jsonBody(EmbedBody), async (c) => {
    const b = c.req.valid('json');
    const dims = b.dimensions;
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

  app.post('/embeddings', jsonBody(EmbeddingsBody), async (c) => {
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
