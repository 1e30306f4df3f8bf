/** A PostgreSQL search cluster: the storage of store/search/pg.ts with the retrieval engine's fusion. */
import { PgSearchStore } from '../../store/search/pg.ts';
import type { ChunkIn, ChunkRow } from '../../store/retrieval.ts';
import type { Embedder } from '../retrieval/engine.ts';
import { fuseHybrid } from '../retrieval/fusion.ts';
import type { BackendHit, BackendSearch, ClusterStatus, IndexCounts, SearchBackend } from './backend.ts';
import type { Filter } from './filter.ts';

const EMBED_BATCH = 16;

export class PgBackend implements SearchBackend {
  readonly kind = 'postgres' as const;
  private constructor(readonly store: PgSearchStore, private embedder: Embedder) {}

  static async open(url: string, embedder: Embedder): Promise<PgBackend> {
    return new PgBackend(await PgSearchStore.open(url), embedder);
  }

  async status(): Promise<ClusterStatus> {
    await this.store.ping();
    return { reachable: true, full_text: 'tsvector-ts_rank_cd', vectors: this.store.pgvector ? 'pgvector' : 'exact-scan' };
  }

  putDocument(indexId: string, docId: string, chunks: ChunkIn[]): Promise<number> {
    return this.store.putDocument(indexId, docId, chunks);
  }

  async embedDocument(indexId: string, docId: string, model: string, signal?: AbortSignal): Promise<number> {
    let n = 0;
    for (;;) {
      signal?.throwIfAborted();
      const batch = await this.store.pending(indexId, docId, EMBED_BATCH);
      if (!batch.length) return n;
      const vectors = await this.embedder(model, batch.map((c) => c.text), signal);
      await this.store.storeVectors(batch.map((c, i) => ({ id: c.id, vector: vectors[i]! })));
      n += batch.length;
    }
  }

  deleteDocument(indexId: string, docId: string): Promise<boolean> {
    return this.store.deleteDocument(indexId, docId);
  }
  deleteByFilter(indexId: string, filter: Filter): Promise<string[]> {
    return this.store.deleteByFilter(indexId, filter);
  }
  deleteIndex(indexId: string): Promise<void> {
    return this.store.deleteIndex(indexId);
  }
  documentChunks(indexId: string, docId: string): Promise<ChunkRow[]> {
    return this.store.documentChunks(indexId, docId);
  }
  listDocuments(indexId: string, limit: number, offset: number) {
    return this.store.listDocuments(indexId, limit, offset);
  }
  counts(indexIds: string[]): Promise<Map<string, IndexCounts>> {
    return this.store.counts(indexIds);
  }

  async search(indexIds: string[], query: string, o: BackendSearch): Promise<BackendHit[]> {
    if (!indexIds.length || !query.trim()) return [];
    const keywordHits = o.mode === 'semantic' ? [] : await this.store.keyword(indexIds, query, o.limit, o.filter);
    let semanticHits: { id: number }[] = [];
    if (o.mode !== 'keyword' && o.model && (await this.store.anyEmbedded(indexIds))) {
      const [q] = await this.embedder(o.model, [query], o.signal);
      semanticHits = await this.store.semantic(indexIds, q!, o.limit, o.filter);
    }
    return fuseHybrid(keywordHits, semanticHits, o, (ids) => this.store.chunksByIds(ids));
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
