/**
 * A search cluster served by the shared retrieval engine's own tables: a remote libSQL URL, or the
 * server's store (the default cluster), which is libSQL or, in a fleet, PostgreSQL.
 */
import { sql } from 'kysely';
import type { Db } from '../../store/schema.ts';
import { type ChunkIn, type ChunkRow, chunksByIds, hasVectorFunctions } from '../../store/retrieval.ts';
import { pgFilter, sqliteFilter } from '../../store/search/filter-sql.ts';
import { isPostgres } from '../../store/dialect.ts';
import { type Embedder, RetrievalEngine } from '../retrieval/engine.ts';
import type { BackendHit, BackendSearch, ClusterStatus, IndexCounts, SearchBackend } from './backend.ts';
import type { Filter } from './filter.ts';

export class LibsqlBackend implements SearchBackend {
  readonly kind = 'libsql' as const;
  readonly engine: RetrievalEngine;

  constructor(private db: Db, embedder: Embedder, private closeDb?: () => Promise<void>) {
    this.engine = new RetrievalEngine(db, embedder);
  }

  #filter(f: Filter | undefined) {
    return isPostgres(this.db) ? pgFilter(f) : sqliteFilter(f);
  }

  async status(): Promise<ClusterStatus> {
    await sql`select 1`.execute(this.db);
    if (isPostgres(this.db)) return { reachable: true, full_text: 'tsvector-ts_rank_cd', vectors: 'exact-scan' };
    const vec = await hasVectorFunctions(this.db);
    return { reachable: true, full_text: 'fts5-bm25', vectors: vec ? 'libsql-vector-index' : 'exact-scan' };
  }

  async putDocument(indexId: string, docId: string, chunks: ChunkIn[]): Promise<number> {
    // the new version is written under a staging id, then the old one removed and the new one renamed:
    // a failure before the rename leaves the old version searchable
    const staging = `${docId}#staging`; // `#` never occurs in a document id
    await this.engine.deleteDocument(indexId, staging);
    await this.engine.addDocument(indexId, staging, chunks);
    await this.engine.deleteDocument(indexId, docId);
    await this.db.updateTable('retrieval_chunks').set({ doc_id: docId }).where('index_id', '=', indexId).where('doc_id', '=', staging)
      .execute();
    return chunks.length;
  }

  embedDocument(indexId: string, docId: string, model: string, signal?: AbortSignal): Promise<number> {
    return this.engine.embedDocument(indexId, docId, model, signal);
  }

  async deleteDocument(indexId: string, docId: string): Promise<boolean> {
    const n = await this.db.selectFrom('retrieval_chunks').select('id').where('index_id', '=', indexId).where('doc_id', '=', docId).limit(1)
      .executeTakeFirst();
    await this.engine.deleteDocument(indexId, docId);
    return n !== undefined;
  }

  async deleteByFilter(indexId: string, filter: Filter): Promise<string[]> {
    const r = await sql<{ doc_id: string }>`select distinct c.doc_id as doc_id from retrieval_chunks c where c.index_id = ${indexId}${
      this.#filter(filter) ?? sql``
    }`.execute(this.db);
    const ids = r.rows.map((x) => x.doc_id);
    for (const id of ids) await this.engine.deleteDocument(indexId, id);
    return ids;
  }

  deleteIndex(indexId: string): Promise<void> {
    return this.engine.deleteIndex(indexId);
  }

  async documentChunks(indexId: string, docId: string): Promise<ChunkRow[]> {
    const rows = await this.db.selectFrom('retrieval_chunks').select('id').where('index_id', '=', indexId).where('doc_id', '=', docId)
      .orderBy('position').execute();
    const map = await chunksByIds(this.db, rows.map((r) => Number(r.id)));
    return rows.map((r) => map.get(Number(r.id))!).filter(Boolean);
  }

  async listDocuments(indexId: string, limit: number, offset: number): Promise<{ id: string; chunks: number }[]> {
    const r = await sql<
      { id: string; n: number }
    >`select doc_id as id, count(*) as n from retrieval_chunks where index_id = ${indexId} group by doc_id order by doc_id limit ${limit} offset ${offset}`
      .execute(this.db);
    return r.rows.map((x) => ({ id: x.id, chunks: Number(x.n) }));
  }

  async counts(indexIds: string[]): Promise<Map<string, IndexCounts>> {
    if (!indexIds.length) return new Map();
    const r = await this.db.selectFrom('retrieval_chunks').select((eb) => [
      'index_id',
      eb.fn.count<number>('doc_id').distinct().as('documents'),
      eb.fn.countAll<number>().as('chunks'),
    ]).where('index_id', 'in', indexIds).groupBy('index_id').execute();
    return new Map(r.map((x) => [x.index_id, { documents: Number(x.documents), chunks: Number(x.chunks) }]));
  }

  search(indexIds: string[], query: string, o: BackendSearch): Promise<BackendHit[]> {
    return this.engine.search(indexIds, query, {
      limit: o.limit,
      pool: o.limit,
      mode: o.mode,
      model: o.model,
      semanticWeight: o.semanticWeight,
      filter: this.#filter(o.filter),
      vectorStrategy: o.exactVectors ? 'exact' : 'auto',
      signal: o.signal,
    });
  }

  async close(): Promise<void> {
    await this.closeDb?.();
  }
}
