/**
 * A PostgreSQL search cluster's storage: chunks with a generated `tsvector` column (GIN index) ranked by
 * `ts_rank_cd`, and vectors as raw little-endian float32 bytes, ranked by pgvector's cosine distance `<=>`
 * over a `vector` copy when the extension is installed, or else by an exact cosine scan computed here over
 * the bytes (in SQL over arrays it is about 20 times slower). The tables are created on first use in the
 * cluster's database (schema `public`).
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { ChunkIn, ChunkRow } from '../retrieval.ts';
import { MAX_QUERY_WORDS } from '../retrieval.ts';
import { queryWords } from '../../services/search/query-words.ts';
import { pgFilter } from './filter-sql.ts';
import type { Filter } from '../../services/search/filter.ts';

// deno-lint-ignore no-explicit-any
type AnyDb = Kysely<any>;

export class PgSearchStore {
  #ready: Promise<void> | null = null;
  pgvector = false;

  private constructor(readonly db: AnyDb) {}

  static async open(url: string): Promise<PgSearchStore> {
    const pg = (await import('pg')).default;
    // bigint ids as numbers: chunk ids stay far below 2^53
    pg.types.setTypeParser(20, (v: string) => Number(v));
    const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 10_000 });
    // A server that goes away emits errors on idle clients (the pool's own listener takes only the first):
    // they are dropped here, the next query reconnects, and a query in flight fails with its own error.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    return new PgSearchStore(new Kysely({ dialect: new PostgresDialect({ pool }) }));
  }

  /** Creates the tables once per process (retried after a failure, e.g. the server was down). */
  ready(): Promise<void> {
    this.#ready ??= this.#init().catch((e) => {
      this.#ready = null;
      throw e;
    });
    return this.#ready;
  }

  /** A round trip to the server: ready() alone answers from memory once the tables exist. */
  async ping(): Promise<void> {
    await this.ready();
    await sql`select 1`.execute(this.db);
  }

  async #init(): Promise<void> {
    const avail = await sql<{ n: number }>`select count(*)::int as n from pg_available_extensions where name = 'vector'`.execute(this.db);
    if (Number(avail.rows[0]?.n) > 0) {
      try {
        await sql`create extension if not exists vector`.execute(this.db);
        this.pgvector = true;
      } catch {
        this.pgvector = false;
      }
    }
    await sql`create table if not exists search_chunks (
      id bigserial primary key, index_id text not null, doc_id text not null, position integer not null,
      text text not null, meta jsonb not null,
      tsv tsvector generated always as (to_tsvector('simple', text)) stored,
      embedding bytea, embedding_dims integer)`.execute(this.db);
    await sql`create index if not exists search_chunks_doc on search_chunks (index_id, doc_id)`.execute(this.db);
    await sql`create index if not exists search_chunks_tsv on search_chunks using gin (tsv)`.execute(this.db);
    if (this.pgvector) await sql`alter table search_chunks add column if not exists vec vector`.execute(this.db);
  }

  async putDocument(indexId: string, docId: string, chunks: ChunkIn[]): Promise<number> {
    await this.ready();
    await this.db.transaction().execute(async (trx) => {
      await sql`delete from search_chunks where index_id = ${indexId} and doc_id = ${docId}`.execute(trx);
      for (let i = 0; i < chunks.length; i += 200) {
        const part = chunks.slice(i, i + 200);
        await sql`insert into search_chunks (index_id, doc_id, position, text, meta) values ${
          sql.join(part.map((c) => sql`(${indexId}, ${docId}, ${c.position}, ${c.text}, ${JSON.stringify(c.meta)}::jsonb)`))
        }`.execute(trx);
      }
    });
    return chunks.length;
  }

  async pending(indexId: string, docId: string, limit: number): Promise<{ id: number; text: string }[]> {
    await this.ready();
    const r = await sql<
      { id: number; text: string }
    >`select id, text from search_chunks where index_id = ${indexId} and doc_id = ${docId} and embedding_dims is null order by position limit ${limit}`
      .execute(this.db);
    return r.rows.map((x) => ({ id: Number(x.id), text: x.text }));
  }

  /** Stores vectors, one statement per 500 rows. */
  async storeVectors(rows: { id: number; vector: Float32Array }[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += 500) {
        const values = rows.slice(i, i + 500).map((r) => {
          const bytes = new Uint8Array(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength);
          const vec = this.pgvector ? sql`, ${`[${Array.from(r.vector).join(',')}]`}::vector` : sql``;
          return sql`(${r.id}::bigint, ${bytes}::bytea, ${r.vector.length}::int${vec})`;
        });
        const cols = this.pgvector ? sql`(id, e, d, vv)` : sql`(id, e, d)`;
        const vec = this.pgvector ? sql`, vec = v.vv` : sql``;
        await sql`update search_chunks c set embedding = v.e, embedding_dims = v.d${vec} from (values ${
          sql.join(values)
        }) as v${cols} where c.id = v.id`.execute(trx);
      }
    });
  }

  async deleteDocument(indexId: string, docId: string): Promise<boolean> {
    await this.ready();
    const r = await sql`delete from search_chunks where index_id = ${indexId} and doc_id = ${docId}`.execute(this.db);
    return Number(r.numAffectedRows ?? 0) > 0;
  }

  async deleteByFilter(indexId: string, filter: Filter): Promise<string[]> {
    await this.ready();
    return this.db.transaction().execute(async (trx) => {
      const r = await sql<{ doc_id: string }>`select distinct c.doc_id from search_chunks c where c.index_id = ${indexId}${
        pgFilter(filter) ?? sql``
      }`.execute(trx);
      const ids = r.rows.map((x) => x.doc_id);
      if (ids.length) await sql`delete from search_chunks where index_id = ${indexId} and doc_id = any(${ids}::text[])`.execute(trx);
      return ids;
    });
  }

  async deleteIndex(indexId: string): Promise<void> {
    await this.ready();
    await sql`delete from search_chunks where index_id = ${indexId}`.execute(this.db);
  }

  async documentChunks(indexId: string, docId: string): Promise<ChunkRow[]> {
    await this.ready();
    const r = await sql<
      ChunkRow
    >`select id, index_id, doc_id, position, text, meta from search_chunks where index_id = ${indexId} and doc_id = ${docId} order by position`
      .execute(this.db);
    return r.rows.map((x) => ({ ...x, id: Number(x.id) }));
  }

  async listDocuments(indexId: string, limit: number, offset: number): Promise<{ id: string; chunks: number }[]> {
    await this.ready();
    const r = await sql<
      { id: string; n: number }
    >`select doc_id as id, count(*)::int as n from search_chunks where index_id = ${indexId} group by doc_id order by doc_id limit ${limit} offset ${offset}`
      .execute(this.db);
    return r.rows.map((x) => ({ id: x.id, chunks: Number(x.n) }));
  }

  async counts(indexIds: string[]): Promise<Map<string, { documents: number; chunks: number }>> {
    await this.ready();
    if (!indexIds.length) return new Map();
    const r = await sql<{ index_id: string; documents: number; chunks: number }>`select index_id, count(distinct doc_id)::int as documents,
      count(*)::int as chunks from search_chunks where index_id in (${sql.join(indexIds)}) group by index_id`.execute(this.db);
    return new Map(r.rows.map((x) => [x.index_id, { documents: Number(x.documents), chunks: Number(x.chunks) }]));
  }

  /** Full-text candidates: any query word may match (as FTS5's OR query), ranked by ts_rank_cd. */
  async keyword(indexIds: string[], query: string, limit: number, filter?: Filter): Promise<{ id: number; score: number }[]> {
    await this.ready();
    const words = queryWords(query, MAX_QUERY_WORDS);
    if (!words.length || indexIds.length === 0) return [];
    const tsq = words.join(' | ');
    const r = await sql<{ id: number; s: number }>`
      select c.id, ts_rank_cd(c.tsv, q) as s from search_chunks c, to_tsquery('simple', ${tsq}) q
      where c.tsv @@ q and c.index_id = any(${indexIds}::text[])${pgFilter(filter) ?? sql``}
      order by s desc, c.id limit ${limit}`.execute(this.db);
    return r.rows.map((x) => ({ id: Number(x.id), score: Number(x.s) }));
  }

  async anyEmbedded(indexIds: string[]): Promise<boolean> {
    await this.ready();
    const r = await sql`select 1 from search_chunks where index_id = any(${indexIds}::text[]) and embedding_dims is not null limit 1`
      .execute(this.db);
    return r.rows.length > 0;
  }

  /** Nearest chunks by cosine distance, exact: pgvector's `<=>`, else a scan of the stored bytes here. */
  async semantic(indexIds: string[], query: Float32Array, limit: number, filter?: Filter): Promise<{ id: number; distance: number }[]> {
    await this.ready();
    const f = pgFilter(filter) ?? sql``;
    if (this.pgvector) {
      const r = await sql<{ id: number; d: number }>`
        select c.id, c.vec <=> ${`[${Array.from(query).join(',')}]`}::vector as d from search_chunks c
        where c.index_id = any(${indexIds}::text[]) and c.embedding_dims = ${query.length}${f} order by d, c.id limit ${limit}`.execute(
        this.db,
      );
      return r.rows.map((x) => ({ id: Number(x.id), distance: Number(x.d) }));
    }
    const r = await sql<{ id: number; e: Uint8Array }>`
      select c.id, c.embedding as e from search_chunks c
      where c.index_id = any(${indexIds}::text[]) and c.embedding_dims = ${query.length}${f}`.execute(this.db);
    let qn = 0;
    for (const x of query) qn += x * x;
    qn = Math.sqrt(qn) || 1;
    const hits = r.rows.map((x) => {
      const v = new Float32Array(x.e.buffer.slice(x.e.byteOffset, x.e.byteOffset + x.e.byteLength));
      let dot = 0, n = 0;
      for (let i = 0; i < v.length; i++) (dot += v[i]! * query[i]!), (n += v[i]! * v[i]!);
      return { id: Number(x.id), distance: 1 - dot / (Math.sqrt(n) * qn || 1) };
    });
    return hits.sort((a, b) => a.distance - b.distance || a.id - b.id).slice(0, limit);
  }

  async chunksByIds(ids: number[]): Promise<Map<number, ChunkRow>> {
    const out = new Map<number, ChunkRow>();
    if (!ids.length) return out;
    const r = await sql<ChunkRow>`select id, index_id, doc_id, position, text, meta from search_chunks where id = any(${ids}::bigint[])`
      .execute(this.db);
    for (const x of r.rows) out.set(Number(x.id), { ...x, id: Number(x.id) });
    return out;
  }

  close(): Promise<void> {
    return this.db.destroy();
  }
}
