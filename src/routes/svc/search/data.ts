/**
 * Search data routes for any key with search access, in its search cluster (docs/api/search.md):
 * documents (add/replace, get, list, delete by id or filter), query, and chat with documents. Writes,
 * queries and chat are tasks under the job contract; a collection outside the key's grants is 404.
 */
import { readFile } from 'node:fs/promises';
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { admitTaskInput } from '../../../http/task-input.ts';
import { taskHandler } from '../../../http/task-route.ts';
import { namedSseResponse } from '../../../http/sse.ts';
import { invalidRequest, readJson, validate } from '../../../http/validate.ts';
import { detectFile } from '../../../services/documents/detect.ts';
import type { FileStore } from '../../../services/files/file-store.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';
import { FilterSchema } from '../../../services/search/filter.ts';
import { citationsOf, type DocChatIn } from '../../../services/search/doc-chat.ts';
import type { Search } from '../../../services/search/index.ts';
import type { DocumentIn, QueryIn } from '../../../services/search/search-service.ts';
import { unsupportedFileType } from '../../../services/errors.ts';

const MAX_DOCS = 1000;
const MAX_TEXT = 5_000_000;
const docId = v.pipe(
  v.union([v.string(), v.number()]),
  v.transform(String),
  v.regex(/^[A-Za-z0-9_.:@-]{1,200}$/, 'a document id: 1 to 200 letters, digits, _ . : @ -'),
);
const metadata = v.optional(
  v.pipe(v.record(v.string(), v.unknown()), v.check((m) => JSON.stringify(m).length <= 64_000, 'metadata over 64 KB')),
  {},
);
const TextDocs = v.strictObject({
  documents: v.pipe(
    v.array(v.strictObject({ id: docId, text: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_TEXT)), metadata })),
    v.minLength(1),
    v.maxLength(MAX_DOCS),
  ),
});
const FileDoc = v.object({ id: docId, metadata });
const ratio = v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1)), 0.5);
const mode = v.optional(v.picklist(['hybrid', 'keyword', 'semantic']), 'hybrid');
const rerank = v.optional(v.union([
  v.pipe(v.boolean(), v.transform((b) => (b ? { candidates: 50 } : undefined))),
  v.strictObject({
    model: v.optional(v.string()),
    candidates: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(200)), 50),
  }),
]));
const Query = v.strictObject({
  q: v.pipe(v.string(), v.minLength(1, 'q must not be empty'), v.maxLength(4000)),
  mode,
  semantic_ratio: ratio,
  filter: v.optional(FilterSchema),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 10),
  offset: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(999)), 0),
  highlight: v.optional(v.boolean(), false),
  facets: v.optional(v.pipe(v.array(v.pipe(v.string(), v.maxLength(64))), v.maxLength(16))),
  rerank,
  rewrite: v.optional(v.strictObject({ model: v.pipe(v.string(), v.minLength(1)) })),
});
const DeleteByFilter = v.strictObject({ filter: FilterSchema });
const Message = v.object({ role: v.picklist(['system', 'user', 'assistant']), content: v.pipe(v.string(), v.maxLength(200_000)) });
const Chat = v.strictObject({
  model: v.pipe(v.string(), v.minLength(1)),
  messages: v.pipe(v.array(Message), v.minLength(1), v.maxLength(200)),
  collections: v.optional(v.pipe(v.array(v.strictObject({ tenant: v.string(), collection: v.string() })), v.maxLength(100))),
  mode,
  semantic_ratio: ratio,
  sources: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(20)), 5),
  filter: v.optional(FilterSchema),
  rerank,
  max_tokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(32768))),
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(2))),
  stream: v.optional(v.boolean(), false),
});

const COL = '/search/tenants/:tenant/collections/:collection';

export function searchDataRoutes(search: Search, runner: TaskRunner, files: FileStore) {
  const s = search.service;
  const app = new Hono<AppEnv>();
  const params = (c: { req: { param(k: string): string } }) => [c.req.param('tenant'), c.req.param('collection')] as const;

  app.get('/search', async (c) => c.json({ object: 'search.access', ...(await search.resources.reachOf(c.get('owner'))) }));
  app.get('/search/collections', async (c) => c.json({ object: 'list', data: await search.resources.readable(c.get('owner')) }));
  app.get(COL, async (c) => c.json(await search.resources.collectionFor(c.get('owner'), ...params(c), 'read')));

  // add or replace: JSON {documents: [{id, text, metadata}]}, or one file (multipart / base64 / file_id) with id and metadata
  app.post(
    `${COL}/documents`,
    taskHandler<{ docs: DocumentIn[]; tenant: string; collection: string; cleanup(): Promise<void> }>(runner, {
      name: 'search.documents.put',
      async input(c) {
        const [tenant, collection] = params(c);
        const owner = c.get('owner');
        await search.resources.collectionFor(owner, tenant, collection, 'write'); // 403/404 before reading a large body
        return admitTaskInput(c, files, async (ti) => {
          if (ti.files.length > 1) {
            throw invalidRequest('one file per request (send text documents as JSON to add many at once)', [{
              field: 'file',
              message: 'too many',
            }]);
          }
          if (ti.files.length === 1) {
            const f = ti.files[0]!;
            const o = validate(FileDoc, ti.options);
            const format = await detectFile(f.path);
            if (!format) {
              throw unsupportedFileType(
                `'${f.filename}' is not a format the document pipeline reads (PDF, DOCX, HTML, Markdown, text, images)`,
              );
            }
            const bytes = new Uint8Array(await readFile(f.path));
            return {
              docs: [{ id: o.id, bytes, format, filename: f.filename, metadata: o.metadata }],
              tenant,
              collection,
              cleanup: ti.cleanup,
            };
          }
          const o = validate(TextDocs, ti.options);
          return {
            docs: o.documents.map((d) => ({ id: d.id, text: d.text, metadata: d.metadata })),
            tenant,
            collection,
            cleanup: ti.cleanup,
          };
        });
      },
      run: (input, ctx) => s.putDocuments(ctx.owner, input.tenant, input.collection, input.docs, ctx.signal, ctx.progress),
      cleanup: (input) => input.cleanup(),
    }),
  );
  app.get(`${COL}/documents`, async (c) => {
    const limit = Math.min(1000, Math.max(1, Number(c.req.query('limit') ?? 100) || 100));
    const offset = Math.max(0, Number(c.req.query('offset') ?? 0) || 0);
    return c.json(await s.listDocuments(c.get('owner'), ...params(c), limit, offset));
  });
  app.get(`${COL}/documents/:id`, async (c) => c.json(await s.getDocument(c.get('owner'), ...params(c), c.req.param('id'))));
  app.delete(`${COL}/documents/:id`, async (c) => c.json(await s.deleteDocument(c.get('owner'), ...params(c), c.req.param('id'))));
  app.post(
    `${COL}/documents/delete`,
    taskHandler<{ filter: v.InferOutput<typeof FilterSchema>; tenant: string; collection: string }>(runner, {
      name: 'search.documents.delete',
      async input(c) {
        const [tenant, collection] = params(c);
        await search.resources.collectionFor(c.get('owner'), tenant, collection, 'write');
        return { filter: (await readJson(c, DeleteByFilter)).filter, tenant, collection };
      },
      run: (i, ctx) => s.deleteByFilter(ctx.owner, i.tenant, i.collection, i.filter),
    }),
  );

  app.post(
    `${COL}/query`,
    taskHandler<QueryIn & { tenant: string; collection: string }>(runner, {
      name: 'search.query',
      async input(c) {
        const [tenant, collection] = params(c);
        await search.resources.collectionFor(c.get('owner'), tenant, collection, 'read');
        return { ...(await readJson(c, Query)), tenant, collection } as QueryIn & { tenant: string; collection: string };
      },
      run: ({ tenant, collection, ...q }, ctx) => s.query(ctx.owner, tenant, collection, { ...q, signal: ctx.signal }),
    }),
  );

  const chatIn = (b: v.InferOutput<typeof Chat>, signal?: AbortSignal): DocChatIn => ({
    model: b.model,
    messages: b.messages,
    collections: b.collections,
    mode: b.mode,
    semantic_ratio: b.semantic_ratio,
    sources: b.sources,
    filter: b.filter,
    rerank: b.rerank,
    maxTokens: b.max_tokens,
    temperature: b.temperature,
    signal,
  });
  app.post('/search/chat', async (c, next) => {
    const b = await readJson(c, Chat);
    for (const w of b.collections ?? []) await search.resources.collectionFor(c.get('owner'), w.tenant, w.collection, 'read');
    if (!b.collections?.length) await search.resources.clusterOf(c.get('owner'));
    if (!b.stream) {
      // the body is read once: hand it to the task form
      return taskHandler<typeof b>(runner, {
        name: 'search.chat',
        input: async () => b,
        run: (x, ctx) => search.docChat.answer(ctx.owner, chatIn(x, ctx.signal)),
      })(c, next);
    }
    const started = await search.docChat.start(c.get('owner'), chatIn(b, c.req.raw.signal));
    return namedSseResponse(c, chatEvents(started));
  });
  return app;
}

async function* chatEvents(started: Awaited<ReturnType<Search['docChat']['start']>>) {
  yield { type: 'search.chat.sources', query: started.query, sources: started.sources };
  let text = '';
  for await (const d of started.stream) {
    if (d.content) {
      text += d.content;
      yield { type: 'search.chat.delta', content: d.content };
    }
  }
  const r = await started.stream.result;
  yield {
    type: 'search.chat.completed',
    model: r.model,
    message: { role: 'assistant', content: text },
    citations: citationsOf(text, started.sources),
    finish_reason: r.finishReason,
    usage: { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens },
  };
}
