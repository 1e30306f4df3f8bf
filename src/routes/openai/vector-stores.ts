/**
 * Dialect A vector stores: create/list/retrieve/update/delete stores, attach/list/retrieve/detach files,
 * and search (POST /v1/vector_stores/{id}/search). Every store is private to its key.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody, validate } from '../../http/validate.ts';
import type { ChunkingOptions } from '../../services/retrieval/chunk-document.ts';
import type { VectorStores } from '../../services/retrieval/vector-stores.ts';
import { AttributeFilterSchema } from '../../services/retrieval/attribute-filter.ts';

const Metadata = v.optional(v.pipe(v.record(v.string(), v.string()), v.check((m) => Object.keys(m).length <= 16, 'at most 16 keys')));
/** auto (800 tokens, 300 overlap) or static with OpenAI's bounds (see docs/api/responses.md). */
const Chunking = v.optional(v.nullable(v.variant('type', [
  v.object({ type: v.literal('auto') }),
  v.object({
    type: v.literal('static'),
    static: v.pipe(
      v.object({
        max_chunk_size_tokens: v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(4096)),
        chunk_overlap_tokens: v.pipe(v.number(), v.integer(), v.minValue(0)),
      }),
      v.check(
        (s) => s.chunk_overlap_tokens <= s.max_chunk_size_tokens / 2,
        'chunk_overlap_tokens must not exceed half of max_chunk_size_tokens',
      ),
    ),
  }),
])));
type ChunkingIn = v.InferOutput<typeof Chunking>;
/** The splitter wants the overlap below half the size: an overlap of exactly half is cut one token shorter. */
const chunkingOf = (c: ChunkingIn): ChunkingOptions | undefined =>
  c?.type === 'static'
    ? {
      maxTokens: c.static.max_chunk_size_tokens,
      overlap: Math.min(c.static.chunk_overlap_tokens, Math.ceil(c.static.max_chunk_size_tokens / 2) - 1),
    }
    : undefined;

const Attributes = v.optional(v.nullable(v.pipe(
  v.record(
    v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/, 'an attribute key: letters, digits, _ . - (up to 64)')),
    v.union([v.pipe(v.string(), v.maxLength(512)), v.number(), v.boolean()]),
  ),
  v.check((a) => Object.keys(a).length <= 16, 'at most 16 attributes'),
)));

const Create = v.object({
  name: v.optional(v.pipe(v.string(), v.maxLength(256))),
  file_ids: v.optional(v.pipe(v.array(v.string()), v.maxLength(500))),
  metadata: Metadata,
  embedding_model: v.optional(v.pipe(v.string(), v.maxLength(300))),
  chunking_strategy: Chunking,
  expires_after: v.optional(v.null()),
});
const Update = v.object({ name: v.optional(v.pipe(v.string(), v.maxLength(256))), metadata: Metadata });
const Attach = v.object({
  file_id: v.pipe(v.string(), v.minLength(1)),
  attributes: Attributes,
  chunking_strategy: Chunking,
});
const Batch = v.object({
  file_ids: v.pipe(v.array(v.pipe(v.string(), v.minLength(1))), v.minLength(1), v.maxLength(500)),
  attributes: Attributes,
  chunking_strategy: Chunking,
});
const UpdateFile = v.object({ attributes: v.nullable(Attributes) });
const Search = v.object({
  query: v.union([v.pipe(v.string(), v.minLength(1)), v.pipe(v.array(v.string()), v.minLength(1))]),
  max_num_results: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(50)), 10),
  rewrite_query: v.optional(v.literal(false)),
  filters: v.optional(v.nullable(AttributeFilterSchema)),
  ranking_options: v.optional(
    v.nullable(
      v.object({
        ranker: v.optional(v.picklist(['auto', 'default-2024-11-15'])),
        score_threshold: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
      }),
    ),
  ),
});
const FilesQuery = v.object({ filter: v.optional(v.picklist(['in_progress', 'completed', 'failed', 'cancelled'])) });

const list = <T extends { id: string }>(data: T[]) => ({
  object: 'list' as const,
  data,
  first_id: data[0]?.id ?? null,
  last_id: data.at(-1)?.id ?? null,
  has_more: false,
});

export function openaiVectorStoreRoutes(stores: VectorStores) {
  const app = new Hono<AppEnv>();
  const owner = (c: { get(k: 'owner'): { id: string } }) => c.get('owner').id;
  app.post('/vector_stores', jsonBody(Create), async (c) => {
    const b = c.req.valid('json');
    return c.json(
      await stores.create(owner(c), {
        name: b.name,
        file_ids: b.file_ids,
        metadata: b.metadata,
        embedding_model: b.embedding_model,
        chunking: chunkingOf(b.chunking_strategy),
      }),
    );
  });
  app.get('/vector_stores', async (c) => c.json(list(await stores.list(owner(c)))));
  app.get('/vector_stores/:id', async (c) => c.json(await stores.get(owner(c), c.req.param('id'))));
  app.post(
    '/vector_stores/:id',
    jsonBody(Update),
    async (c) => c.json(await stores.update(owner(c), c.req.param('id'), c.req.valid('json'))),
  );
  app.delete('/vector_stores/:id', async (c) => {
    await stores.delete(owner(c), c.req.param('id'));
    return c.json({ id: c.req.param('id'), object: 'vector_store.deleted', deleted: true });
  });
  app.post('/vector_stores/:id/files', jsonBody(Attach), async (c) => {
    const b = c.req.valid('json');
    return c.json(await stores.attach(owner(c), c.req.param('id'), b.file_id, b.attributes ?? {}, chunkingOf(b.chunking_strategy)));
  });
  app.post('/vector_stores/:id/file_batches', jsonBody(Batch), async (c) => {
    const b = c.req.valid('json');
    return c.json(await stores.createBatch(owner(c), c.req.param('id'), b.file_ids, b.attributes ?? {}, chunkingOf(b.chunking_strategy)));
  });
  app.get('/vector_stores/:id/file_batches', async (c) => c.json(list(await stores.listBatches(owner(c), c.req.param('id')))));
  app.get(
    '/vector_stores/:id/file_batches/:batchId',
    async (c) => c.json(await stores.getBatch(owner(c), c.req.param('id'), c.req.param('batchId'))),
  );
  app.post(
    '/vector_stores/:id/file_batches/:batchId/cancel',
    async (c) => c.json(await stores.cancelBatch(owner(c), c.req.param('id'), c.req.param('batchId'))),
  );
  app.get('/vector_stores/:id/file_batches/:batchId/files', async (c) => {
    const q = validate(FilesQuery, c.req.query());
    return c.json(list(await stores.listBatchFiles(owner(c), c.req.param('id'), c.req.param('batchId'), q.filter)));
  });
  app.post(
    '/vector_stores/:id/files/:fileId',
    jsonBody(UpdateFile),
    async (c) =>
      c.json(await stores.updateFileAttributes(owner(c), c.req.param('id'), c.req.param('fileId'), c.req.valid('json').attributes ?? {})),
  );
  app.get('/vector_stores/:id/files/:fileId/content', async (c) => {
    const texts = await stores.fileContent(owner(c), c.req.param('id'), c.req.param('fileId'));
    return c.json({
      object: 'vector_store.file_content.page',
      data: texts.map((text) => ({ type: 'text', text })),
      has_more: false,
      next_page: null,
    });
  });
  app.get('/vector_stores/:id/files', async (c) => {
    const q = validate(FilesQuery, c.req.query());
    return c.json(list(await stores.listFiles(owner(c), c.req.param('id'), q.filter)));
  });
  app.get(
    '/vector_stores/:id/files/:fileId',
    async (c) => c.json(await stores.getFile(owner(c), c.req.param('id'), c.req.param('fileId'))),
  );
  app.delete('/vector_stores/:id/files/:fileId', async (c) => {
    await stores.deleteFile(owner(c), c.req.param('id'), c.req.param('fileId'));
    return c.json({ id: c.req.param('fileId'), object: 'vector_store.file.deleted', deleted: true });
  });
  app.post('/vector_stores/:id/search', jsonBody(Search), async (c) => {
    const b = c.req.valid('json');
    const query = Array.isArray(b.query) ? b.query.join(' ') : b.query;
    const threshold = b.ranking_options?.score_threshold ?? 0;
    const hits = (await stores.search(owner(c), [c.req.param('id')], query, {
      limit: b.max_num_results,
      signal: c.req.raw.signal,
      filters: b.filters ?? undefined,
    })).filter((h) => h.score >= threshold);
    return c.json({
      object: 'vector_store.search_results.page',
      search_query: Array.isArray(b.query) ? b.query : [b.query],
      data: hits.map((h) => ({
        file_id: h.file_id,
        filename: h.filename,
        score: h.score,
        attributes: h.attributes,
        content: [{ type: 'text', text: h.text }],
      })),
      has_more: false,
      next_page: null,
    });
  });
  return app;
}
