/**
 * Reranking with the catalog's cross-encoder, as a native task (`POST /svc/v1/rerank`) and in the shape
 * Cohere, Jina, vLLM and llama.cpp clients send (`POST /v1/rerank`): model, query, documents (strings or
 * objects with `text`), top_n, return_documents; results sorted by relevance_score, each with its index
 * in the request (docs/api/search.md).
 */
import { type Context, Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { taskHandler } from '../../../http/task-route.ts';
import { readJson } from '../../../http/validate.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';
import type { Reranker } from '../../../services/search/rerank.ts';

const MAX_DOCS = 1000;
const doc = v.union([v.pipe(v.string(), v.maxLength(100_000)), v.object({ text: v.pipe(v.string(), v.maxLength(100_000)) })]);
const Rerank = v.object({
  model: v.optional(v.pipe(v.string(), v.minLength(1))),
  query: v.pipe(v.string(), v.minLength(1, 'query must not be empty'), v.maxLength(20_000)),
  documents: v.pipe(v.array(doc), v.minLength(1, 'documents must not be empty'), v.maxLength(MAX_DOCS)),
  top_n: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  return_documents: v.optional(v.boolean(), false),
});
type RerankIn = v.InferOutput<typeof Rerank>;

const textOf = (d: RerankIn['documents'][number]) => (typeof d === 'string' ? d : d.text);

async function rerankAnswer(reranker: Reranker, b: RerankIn, signal?: AbortSignal) {
  const texts = b.documents.map(textOf);
  const r = await reranker.rerank(b.model, b.query, texts, signal);
  const order = r.scores.map((score, index) => ({ index, score })).sort((a, c) => c.score - a.score || a.index - c.index).slice(
    0,
    b.top_n ?? texts.length,
  );
  return {
    id: `rerank-${crypto.randomUUID()}`,
    object: 'rerank',
    model: r.model,
    results: order.map((o) => ({
      index: o.index,
      relevance_score: o.score,
      ...(b.return_documents
        ? { document: typeof b.documents[o.index] === 'string' ? { text: texts[o.index] } : b.documents[o.index] }
        : {}),
    })),
    usage: { total_tokens: 0 },
    meta: { billed_units: { search_units: 1 } },
  };
}

export function rerankRoutes(reranker: Reranker, runner: TaskRunner) {
  const app = new Hono<AppEnv>();
  const handler = taskHandler<RerankIn>(runner, {
    name: 'rerank',
    input: (c: Context<AppEnv>) => readJson(c, Rerank),
    run: (b, ctx) => rerankAnswer(reranker, b, ctx.signal),
  });
  app.post('/rerank', handler);
  return app;
}

/** The de facto shape (Cohere, Jina, vLLM, llama.cpp) under /v1: answered inline, as those servers do. */
export function v1RerankRoutes(reranker: Reranker) {
  const app = new Hono<AppEnv>();
  app.post('/rerank', async (c) => c.json(await rerankAnswer(reranker, await readJson(c, Rerank), c.req.raw.signal)));
  return app;
}
