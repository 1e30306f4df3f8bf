/**
 * Dialect A vector stores: create/list/retrieve/update/delete stores, attach/list/retrieve/detach files,
 * and search (POST /v1/vector_stores/{id}/search). Every store is private to its key.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody, validate } from '../../http/validate.ts';
import type { VectorStores } from '../../services/retrieval/vector-stores.ts';

const Metadata = v.optional(v.pipe(v.record(v.string(), v.string()), v.check((m) => Object.keys(m).length <= 16, 'at most 16 keys')));
/** Only the automatic chunking is served; a static strategy is refused by name (see docs/api/responses.md). */
const Chunking = v.optional(v.nullable(v.object({ type: v.literal('auto') })));

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
  attributes: v.optional(v.nullable(v.record(v.string(), v.union([v.string(), v.number(), v.boolean()])))),
  chunking_strategy: Chunking,
});
const Search = v.object({
  query: v.union([v.pipe(v.string(), v.minLength(1)), v.pipe(v.array(v.string()), v.minLength(1))]),
  max_num_results: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(50)), 10),
  rewrite_query: v.optional(v.literal(false)),
  filters: v.optional(v.null()),
  ranking_options: v.optional(v.nullable(v.object({ ranker: v.optional(v.picklist(['auto', 'default-2024-11-15'])), score_threshold: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))) }))),
});
const FilesQuery = v.object({ filter: v.optional(v.picklist(['in_progress', 'completed', 'failed', 'cancelled'])) });

const list = <T extends { id: string }>(data: T[]) => ({ object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false });

export function openaiVectorStoreRoutes(stores: VectorStores) {
  const app = new Hono<AppEnv>();
  const owner = (c: { get(k: 'owner'): { id: string } }) => c.get('owner').id;
  app.post('/vector_stores', jsonBody(Create), async (c) => {
    const b = c.req.valid('json');
    return c.json(await stores.create(owner(c), { name: b.name, file_ids: b.file_ids, metadata: b.metadata, embedding_model: b.embedding_model }));
  });
  app.get('/vector_stores', async (c) => c.json(list(await stores.list(owner(c)))));
  app.get('/vector_stores/:id', async (c) => c.json(await stores.get(owner(c), c.req.param('id'))));
  app.post('/vector_stores/:id', jsonBody(Update), async (c) => c.json(await stores.update(owner(c), c.req.param('id'), c.req.valid('json'))));
  app.delete('/vector_stores/:id', async (c) => {
    await stores.delete(owner(c), c.req.param('id'));
    return c.json({ id: c.req.param('id'), object: 'vector_store.deleted', deleted: true });
  });
  app.post('/vector_stores/:id/files', jsonBody(Attach), async (c) => {
    const b = c.req.valid('json');
    return c.json(await stores.attach(owner(c), c.req.param('id'), b.file_id, b.attributes ?? {}));
  });
  app.get('/vector_stores/:id/files', async (c) => {
    const q = validate(FilesQuery, c.req.query());
    return c.json(list(await stores.listFiles(owner(c), c.req.param('id'), q.filter)));
  });
  app.get('/vector_stores/:id/files/:fileId', async (c) => c.json(await stores.getFile(owner(c), c.req.param('id'), c.req.param('fileId'))));
  app.delete('/vector_stores/:id/files/:fileId', async (c) => {
    await stores.deleteFile(owner(c), c.req.param('id'), c.req.param('fileId'));
    return c.json({ id: c.req.param('fileId'), object: 'vector_store.file.deleted', deleted: true });
  });
  app.post('/vector_stores/:id/search', jsonBody(Search), async (c) => {
    const b = c.req.valid('json');
    const query = Array.isArray(b.query) ? b.query.join(' ') : b.query;
    const threshold = b.ranking_options?.score_threshold ?? 0;
    const hits = (await stores.search(owner(c), [c.req.param('id')], query, { limit: b.max_num_results, signal: c.req.raw.signal })).filter((h) => h.score >= threshold);
    return c.json({
      object: 'vector_store.search_results.page', search_query: Array.isArray(b.query) ? b.query : [b.query],
      data: hits.map((h) => ({ file_id: h.file_id, filename: h.filename, score: h.score, attributes: h.attributes, content: [{ type: 'text', text: h.text }] })),
      has_more: false, next_page: null,
    });
  });
  return app;
}
