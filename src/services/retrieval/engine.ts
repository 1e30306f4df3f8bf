/**
 * The retrieval engine shared by every kind of index (vector stores, search collections): documents as
 * chunks that are full-text searchable (FTS5, BM25) as soon as they are stored, embedded afterwards
 * (libSQL vector index, or an exact scan), and queried by keyword, by meaning, or both fused by
 * reciprocal rank fusion (fusion.ts). Knows nothing of HTTP or of who owns an index.
 */
import type { Db } from '../../store/schema.ts';
import {
  annVectorSearch,
  anyEmbedded,
  type ChunkFilter,
  type ChunkIn,
  type ChunkRow,
  chunksByIds,
  deleteChunks,
  exactVectorSearch,
  ftsSearch,
  insertChunks,
  pendingChunks,
  storeVectors,
  VECTOR_INDEX_PARAMS,
  vectorCounts,
  type VectorHit,
} from '../../store/retrieval.ts';
import { fuseHybrid } from './fusion.ts';

/** Text → one vector per text (the embedding model's pooled, normalised output). */
export type Embedder = (model: string, texts: string[], signal?: AbortSignal) => Promise<Float32Array[]>;

export type SearchMode = 'hybrid' | 'keyword' | 'semantic';

export interface SearchOptions {
  limit: number;
  mode?: SearchMode;
  /** Embedding model of the query (required for semantic/hybrid to use vectors). */
  model?: string;
  /** Weight of the semantic list in hybrid fusion (keyword gets 1 - this); default 0.5. */
  semanticWeight?: number;
  /** Force the vector side to an exact scan (benchmarks, tests); otherwise chosen by size. */
  vectorStrategy?: 'auto' | 'exact' | 'ann';
  /** Metadata filter (SQL over the chunk row); a filtered vector search is an exact scan of the matching chunks. */
  filter?: ChunkFilter;
  /** Candidates taken from each side before fusion (default max(4 × limit, 40)). */
  pool?: number;
  signal?: AbortSignal;
}

export interface SearchHit {
  chunk: ChunkRow;
  score: number;
  keywordRank?: number;
  semanticRank?: number;
}

/** Scopes with at most this many vectors are scanned exactly: faster than the index at that size and always exact. */
export const EXACT_SCAN_MAX = 4000;
const EMBED_BATCH = 16;

export class RetrievalEngine {
  constructor(private db: Db, private embedder: Embedder) {}

  /** Stores a document's chunks; they are full-text searchable when this returns. */
  addDocument(indexId: string, docId: string, chunks: ChunkIn[]): Promise<number[]> {
    return insertChunks(this.db, indexId, docId, chunks);
  }

  /** Embeds the document's chunks that have no vector yet; returns how many were embedded. */
  async embedDocument(indexId: string, docId: string, model: string, signal?: AbortSignal): Promise<number> {
    let n = 0;
    for (;;) {
      signal?.throwIfAborted();
      const batch = await pendingChunks(this.db, indexId, docId, EMBED_BATCH);
      if (batch.length === 0) return n;
      const vectors = await this.embedder(model, batch.map((c) => c.text), signal);
      const dims = vectors[0]!.length;
      await storeVectors(this.db, dims, batch.map((c, i) => ({ chunkId: c.id, indexId, vector: vectors[i]! })));
      n += batch.length;
    }
  }

  deleteDocument(indexId: string, docId: string): Promise<void> {
    return deleteChunks(this.db, indexId, docId);
  }

  deleteIndex(indexId: string): Promise<void> {
    return deleteChunks(this.db, indexId);
  }

  async keyword(indexIds: string[], query: string, limit: number, filter?: ChunkFilter): Promise<{ id: number }[]> {
    return ftsSearch(this.db, indexIds, query, limit, filter);
  }

  /** Nearest chunks by cosine distance: exact for small scopes, the DiskANN index (over-fetched, then exact if short) for large ones. */
  async semantic(
    indexIds: string[],
    query: Float32Array,
    limit: number,
    strategy: SearchOptions['vectorStrategy'] = 'auto',
    filter?: ChunkFilter,
  ): Promise<VectorHit[]> {
    const dims = query.length;
    if (filter) return exactVectorSearch(this.db, dims, indexIds, query, limit, filter);
    if (strategy === 'exact') return exactVectorSearch(this.db, dims, indexIds, query, limit);
    const { scope, total } = await vectorCounts(this.db, dims, indexIds);
    if (scope === 0) return [];
    if (strategy === 'auto' && scope <= EXACT_SCAN_MAX) return exactVectorSearch(this.db, dims, indexIds, query, limit);
    // vector_top_k walks a beam of search_l nodes whatever k is asked and returns at most search_l of them, so
    // take them all: re-ranking them by the exact cosine costs little and lifts recall (BENCHMARKS.md)
    const candidates = Math.min(total, VECTOR_INDEX_PARAMS.searchL);
    const hits = await annVectorSearch(this.db, dims, indexIds, query, limit, candidates);
    if (hits && (hits.length >= limit || hits.length >= scope || strategy === 'ann')) return hits;
    return exactVectorSearch(this.db, dims, indexIds, query, limit);
  }

  async search(indexIds: string[], query: string, o: SearchOptions): Promise<SearchHit[]> {
    if (indexIds.length === 0 || !query.trim()) return [];
    const mode = o.mode ?? 'hybrid';
    const pool = o.pool ?? Math.max(o.limit * 4, 40);
    const keywordHits = mode === 'semantic' ? [] : await this.keyword(indexIds, query, pool, o.filter);
    let semanticHits: { id: number }[] = [];
    if (mode !== 'keyword' && o.model && (await anyEmbedded(this.db, indexIds))) {
      const [q] = await this.embedder(o.model, [query], o.signal);
      semanticHits = await this.semantic(indexIds, q!, pool, o.vectorStrategy, o.filter);
    }
    return fuseHybrid(
      keywordHits,
      semanticHits,
      { mode, semanticWeight: o.semanticWeight ?? 0.5, limit: o.limit },
      (ids) => chunksByIds(this.db, ids),
    );
  }
}
