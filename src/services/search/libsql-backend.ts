/** A libSQL search cluster (the embedded store, or a remote libSQL URL) over the shared retrieval engine. */
import { sql } from 'kysely';
import type { Db } from '../../store/schema.ts';
import { chunksByIds, hasVectorFunctions, type ChunkIn, type ChunkRow } from '../../store/retrieval.ts';
import { sqliteFilter } from '../../store/search/filter-sql.ts';
import { RetrievalEngine, type Embedder } from '../retrieval/engine.ts';
import type { BackendHit, BackendSearch, ClusterStatus, SearchBackend } from './backend.ts';
import type { Filter } from './filter.ts';

export class LibsqlBackend implements SearchBackend {
  readonly kind = 'libsql' as const;
  readonly engine: RetrievalEngine;

  constructor(private db: Db, embedder: Embedder, private closeDb?: () => Promise<void>) {
    this.engine = new RetrievalEngine(db, embedder);
  }

  async status(): Promise<ClusterStatus> {
    await sql`select 1`.execute(this.db);
    const vec = await hasVectorFunctions(this.db);
    return { reachable: true, full_text: 'fts5-bm25', vectors: vec ? 'libsql-vector-index' : 'exact-scan' };
  }

  async putDocument(indexId: string, docId: string, chunks: ChunkIn[]): Promise<number> {
    // insert first, then drop the old version's chunks: a failure in between leaves the old version searchable
    const old = (await this.db.selectFrom('retrieval_chunks').select('id').where('index_id', '=', indexId).where('doc_id', '=', docId).execute()).map((r) => Number(r.id));
    await this.engine.addDocument(indexId, docId, chunks);
    if (old.length) await this.#deleteIds(old);
    return chunks.length;
  }

  embedDocument(indexId: string, docId: string, model: string, signal?: AbortSignal): Promise<number> {
    return this.engine.embedDocument(indexId, docId, model, signal);
  }

  async deleteDocument(indexId: string, docId: string): Promise<boolean> {
    const n = await this.db.selectFrom('retrieval_chunks').select('id').where('index_id', '=', indexId).where('doc_id', '=', docId).limit(1).executeTakeFirst();
    await this.engine.deleteDocument(indexId, docId);
    return n !== undefined;
  }

  async deleteByFilter(indexId: string, filter: Filter): Promise<string[]> {
    const r = await sql<{ doc_id: string }>`select distinct c.doc_id as doc_id from retrieval_chunks c where c.index_id = ${indexId}${sqliteFilter(filter) ?? sql``}`.execute(this.db);
    const ids = r.rows.map((x) => x.doc_id);
    for (const id of ids) await this.engine.deleteDocument(indexId, id);
    return ids;
  }

  deleteIndex(indexId: string): Promise<void> {
    return this.engine.deleteIndex(indexId);
  }

  async documentChunks(indexId: string, docId: string): Promise<ChunkRow[]> {
    const rows = await this.db.selectFrom('retrieval_chunks').select('id').where('index_id', '=', indexId).where('doc_id', '=', docId).orderBy('position').execute();
    const map = await chunksByIds(this.db, rows.map((r) => Number(r.id)));
    return rows.map((r) => map.get(Number(r.id))!).filter(Boolean);
  }

  async listDocuments(indexId: string, limit: number, offset: number): Promise<{ id: string; chunks: number }[]> {
    const r = await sql<{ id: string; n: number }>`select doc_id as id, count(*) as n from retrieval_chunks where index_id = ${indexId} group by doc_id order by doc_id limit ${limit} offset ${offset}`.execute(this.db);
    return r.rows.map((x) => ({ id: x.id, chunks: Number(x.n) }));
  }

  search(indexIds: string[], query: string, o: BackendSearch): Promise<BackendHit[]> {
    return this.engine.search(indexIds, query, { limit: o.limit, pool: o.limit, mode: o.mode, model: o.model, semanticWeight: o.semanticWeight, filter: sqliteFilter(o.filter), vectorStrategy: o.exactVectors ? 'exact' : 'auto', signal: o.signal });
  }

  async #deleteIds(ids: number[]): Promise<void> {
    const tables = (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name like 'retrieval_vectors_%'`.execute(this.db)).rows.map((x) => x.name).filter((n) => /^retrieval_vectors_\d+$/.test(n));
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < ids.length; i += 500) {
        const part = ids.slice(i, i + 500);
        await sql`delete from retrieval_fts where rowid in (${sql.join(part)})`.execute(trx);
        for (const t of tables) await sql`delete from ${sql.table(t)} where chunk_id in (${sql.join(part)})`.execute(trx);
        await trx.deleteFrom('retrieval_chunks').where('id', 'in', part).execute();
      }
    });
  }

  async close(): Promise<void> {
    await this.closeDb?.();
  }
}
