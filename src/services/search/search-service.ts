/**
 * Search over collections (docs/api/search.md): documents added as chunks (text, or any file the
 * document pipeline reads), queries by keyword, meaning or both fused with a weight, metadata filters,
 * pagination, facet counts, highlights, optional cross-encoder reranking and query rewriting; and
 * answers with citations from the collections a key may read (chat with documents).
 */
import type { ChunkIn, ChunkRow } from '../../store/retrieval.ts';
import type { Owner } from '../keys/api-keys.ts';
import { invalidArgument, notFound } from '../errors.ts';
import type { DocFormat } from '../documents/detect.ts';
import { chunkForSearch, DEFAULT_SEARCH_CHUNKING } from './chunking.ts';
import type { SearchMode } from '../retrieval/engine.ts';
import type { BackendHit } from './backend.ts';
import type { Filter } from './filter.ts';
import { highlightTerms, type TermHighlight } from './highlight.ts';
import type { CollectionOut, SearchResources } from './resources.ts';

export interface RerankFn {
  (model: string | undefined, query: string, documents: string[], signal?: AbortSignal): Promise<{ model: string; scores: number[] }>;
}
export interface RewriteFn {
  (model: string, query: string, signal?: AbortSignal): Promise<string>;
}

export interface DocumentIn {
  id: string;
  text?: string;
  bytes?: Uint8Array;
  format?: DocFormat;
  filename?: string;
  metadata: Record<string, unknown>;
}

export interface QueryIn {
  q: string;
  mode: SearchMode;
  /** Weight of the semantic list in hybrid mode, 0 (keyword only) .. 1 (semantic only). */
  semantic_ratio: number;
  filter?: Filter;
  limit: number;
  offset: number;
  highlight: boolean;
  facets?: string[];
  rerank?: { model?: string; candidates: number };
  rewrite?: { model: string };
  signal?: AbortSignal;
}

export interface QueryHit {
  id: string;
  document_id: string;
  chunk: number;
  page: number | null;
  pages: number[];
  heading_path: string[];
  text: string;
  metadata: Record<string, unknown>;
  score: number;
  scores: { fused: number; keyword_rank: number | null; semantic_rank: number | null; rerank?: number };
  highlights?: TermHighlight[];
  collection?: string;
  tenant?: string;
}

/** How many candidates a query draws before pagination, facets and reranking (Meilisearch's default maxTotalHits is 1000). */
export const MAX_CANDIDATES = 1000;

export class SearchService {
  constructor(
    readonly resources: SearchResources,
    private o: { defaultEmbeddingModel: () => Promise<string> | string; rerank: RerankFn; rewrite: RewriteFn },
  ) {}

  async embeddingModelOf(c: CollectionOut): Promise<string | undefined> {
    return c.embedding_model || (await this.o.defaultEmbeddingModel()) || undefined;
  }

  /** Adds or replaces documents: chunked by structure, stored (full-text searchable), then embedded. */
  async putDocuments(
    owner: Owner,
    tenant: string,
    collection: string,
    docs: DocumentIn[],
    signal?: AbortSignal,
    progress?: (d: number, t: number) => void,
  ) {
    const c = await this.resources.collectionFor(owner, tenant, collection, 'write');
    const model = await this.embeddingModelOf(c);
    // chunk everything first: a document the pipeline cannot read fails the task before anything is written
    const chunked: { doc: DocumentIn; chunks: ChunkIn[] }[] = [];
    for (const doc of docs) chunked.push({ doc, chunks: await toChunks(doc, signal) });
    const out = [];
    let done = 0;
    for (const { doc, chunks } of chunked) {
      signal?.throwIfAborted();
      await this.resources.withBackend(c.cluster, (b) => b.putDocument(c.id, doc.id, chunks));
      const embedded = model ? await this.resources.withBackend(c.cluster, (b) => b.embedDocument(c.id, doc.id, model, signal)) : 0;
      out.push({ id: doc.id, object: 'search.document', chunks: chunks.length, embedded, status: 'indexed' });
      progress?.(++done, chunked.length);
    }
    return { object: 'list', collection: `${tenant}/${collection}`, embedding_model: model ?? null, data: out };
  }

  async getDocument(owner: Owner, tenant: string, collection: string, id: string) {
    const c = await this.resources.collectionFor(owner, tenant, collection, 'read');
    const rows = await this.resources.withBackend(c.cluster, (b) => b.documentChunks(c.id, id));
    if (!rows.length) throw notFound(`document '${id}' not found in '${tenant}/${collection}'`);
    return {
      id,
      object: 'search.document',
      collection: `${tenant}/${collection}`,
      metadata: (rows[0]!.meta.metadata ?? {}) as Record<string, unknown>,
      filename: rows[0]!.meta.filename ?? null,
      chunks: rows.map((r) => ({
        chunk: r.position,
        pages: (r.meta.pages ?? []) as number[],
        heading_path: (r.meta.heading_path ?? []) as string[],
        text: r.text,
      })),
    };
  }

  async listDocuments(owner: Owner, tenant: string, collection: string, limit: number, offset: number) {
    const c = await this.resources.collectionFor(owner, tenant, collection, 'read');
    const docs = await this.resources.withBackend(c.cluster, (b) => b.listDocuments(c.id, limit + 1, offset));
    return {
      object: 'list',
      data: docs.slice(0, limit).map((d) => ({ id: d.id, object: 'search.document', chunks: d.chunks })),
      offset,
      limit,
      has_more: docs.length > limit,
    };
  }

  async deleteDocument(owner: Owner, tenant: string, collection: string, id: string) {
    const c = await this.resources.collectionFor(owner, tenant, collection, 'write');
    if (!(await this.resources.withBackend(c.cluster, (b) => b.deleteDocument(c.id, id)))) {
      throw notFound(`document '${id}' not found in '${tenant}/${collection}'`);
    }
    return { id, object: 'search.document', deleted: true };
  }

  async deleteByFilter(owner: Owner, tenant: string, collection: string, filter: Filter) {
    if (!Object.keys(filter).length) {
      throw invalidArgument('filter: at least one condition (delete the collection to remove everything)', [{
        field: 'filter',
        message: 'empty',
      }]);
    }
    const c = await this.resources.collectionFor(owner, tenant, collection, 'write');
    const ids = await this.resources.withBackend(c.cluster, (b) => b.deleteByFilter(c.id, filter));
    return { object: 'search.documents.deleted', deleted: ids.length, ids };
  }

  async query(owner: Owner, tenant: string, collection: string, q: QueryIn) {
    const c = await this.resources.collectionFor(owner, tenant, collection, 'read');
    return this.queryCollections([c], q);
  }

  /** One query over collections of one cluster (the caller checked access). */
  async queryCollections(cols: CollectionOut[], q: QueryIn) {
    const t0 = performance.now();
    let text = q.q;
    let rewritten: string | undefined;
    if (q.rewrite) {
      rewritten = (await this.o.rewrite(q.rewrite.model, q.q, q.signal)).trim() || q.q;
      text = rewritten;
    }
    if (!cols.length) return this.#answer(q, text, rewritten, [], 0, t0);
    const model = await this.embeddingModelOf(cols[0]!);
    if (q.mode === 'semantic' && !model) {
      throw invalidArgument(
        "semantic search needs an embedding model: set the collection's embedding_model or the default_embedding_model setting",
      );
    }
    const candidates = Math.min(
      MAX_CANDIDATES,
      Math.max(q.offset + q.limit, q.rerank?.candidates ?? 0, q.facets?.length ? MAX_CANDIDATES : 0, 50),
    );
    const cluster = cols[0]!.cluster;
    const byId = new Map(cols.map((c) => [c.id, c]));
    let hits = await this.resources.withBackend(cluster, (b) =>
      b.search(cols.map((c) => c.id), text, {
        mode: q.mode,
        limit: candidates,
        model,
        semanticWeight: q.mode === 'keyword' ? 0 : q.mode === 'semantic' ? 1 : q.semantic_ratio,
        filter: q.filter,
        signal: q.signal,
      }));
    let rerankScores: Map<number, number> | undefined;
    if (q.rerank && hits.length) {
      const top = hits.slice(0, q.rerank.candidates);
      const r = await this.o.rerank(q.rerank.model, text, top.map((h) => h.chunk.text), q.signal);
      rerankScores = new Map(top.map((h, i) => [h.chunk.id, r.scores[i]!]));
      const order = top.map((h, i) => ({ h, s: r.scores[i]! })).sort((a, b) => b.s - a.s).map((x) => x.h);
      hits = [...order, ...hits.slice(q.rerank.candidates)];
    }
    const facets = q.facets?.length ? facetCounts(hits, q.facets) : undefined;
    const page = hits.slice(q.offset, q.offset + q.limit).map((h) =>
      toHit(h, byId.get(h.chunk.index_id), rerankScores?.get(h.chunk.id), q.highlight ? text : undefined)
    );
    return this.#answer(q, text, rewritten, page, hits.length, t0, facets);
  }

  #answer(
    q: QueryIn,
    text: string,
    rewritten: string | undefined,
    data: QueryHit[],
    total: number,
    t0: number,
    facets?: Record<string, Record<string, number>>,
  ) {
    return {
      object: 'search.results',
      query: q.q,
      ...(rewritten !== undefined ? { rewritten_query: rewritten } : {}),
      mode: q.mode,
      semantic_ratio: q.mode === 'hybrid' ? q.semantic_ratio : undefined,
      offset: q.offset,
      limit: q.limit,
      estimated_total_hits: total,
      has_more: q.offset + data.length < total,
      data,
      ...(facets ? { facet_distribution: facets } : {}),
      processing_time_ms: Math.round(performance.now() - t0),
      searched_text: text,
    };
  }
}

async function toChunks(doc: DocumentIn, signal?: AbortSignal): Promise<ChunkIn[]> {
  const meta = { metadata: doc.metadata, ...(doc.filename ? { filename: doc.filename } : {}) };
  // text is read as Markdown: its headings and paragraphs are the structure the chunks follow
  const chunks = doc.bytes && doc.format
    ? await chunkForSearch(doc.bytes, doc.format, meta, DEFAULT_SEARCH_CHUNKING, signal)
    : await chunkForSearch(new TextEncoder().encode(doc.text ?? ''), 'markdown', meta, DEFAULT_SEARCH_CHUNKING, signal);
  if (!chunks.length) {
    throw invalidArgument(`document '${doc.id}' has no text to index`, [{ field: doc.bytes ? 'file' : 'text', message: 'no text' }]);
  }
  return chunks;
}

function toHit(h: BackendHit, col: CollectionOut | undefined, rerank: number | undefined, highlightQuery?: string): QueryHit {
  const r: ChunkRow = h.chunk;
  const pages = (r.meta.pages ?? []) as number[];
  return {
    id: `${r.doc_id}#${r.position}`,
    document_id: r.doc_id,
    chunk: r.position,
    page: pages[0] ?? null,
    pages,
    heading_path: (r.meta.heading_path ?? []) as string[],
    text: r.text,
    metadata: (r.meta.metadata ?? {}) as Record<string, unknown>,
    score: rerank ?? h.score,
    scores: {
      fused: h.score,
      keyword_rank: h.keywordRank ?? null,
      semantic_rank: h.semanticRank ?? null,
      ...(rerank !== undefined ? { rerank } : {}),
    },
    ...(highlightQuery !== undefined ? { highlights: highlightTerms(r.text, highlightQuery) } : {}),
    ...(col ? { collection: col.name, tenant: col.tenant } : {}),
  };
}

/** Per facet field, how many distinct documents among the candidates carry each value. */
function facetCounts(hits: BackendHit[], fields: string[]): Record<string, Record<string, number>> {
  const seen = new Set<string>();
  const out: Record<string, Record<string, number>> = Object.fromEntries(fields.map((f) => [f, {}]));
  for (const h of hits) {
    const key = `${h.chunk.index_id}\u0000${h.chunk.doc_id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const md = (h.chunk.meta.metadata ?? {}) as Record<string, unknown>;
    for (const f of fields) {
      const vals = Array.isArray(md[f]) ? (md[f] as unknown[]) : md[f] === undefined || md[f] === null ? [] : [md[f]];
      for (const v of vals) out[f]![String(v)] = (out[f]![String(v)] ?? 0) + 1;
    }
  }
  return out;
}
