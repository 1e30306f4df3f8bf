/**
 * Storage of the retrieval engine: chunks keyed by their owning index (a vector store, a search
 * collection), an FTS5 table for BM25 (rowid = chunk id), and one vector table per dimension count
 * (`retrieval_vectors_<dims>`, an `F32_BLOB(<dims>)` column with a `libsql_vector_idx` cosine index),
 * created on first use. Vectors are stored as raw little-endian float32 bytes, which is libSQL's own
 * F32_BLOB layout, so the same rows serve an exact scan where the vector functions are missing (the
 * runtime's built-in SQLite in the compiled binary).
 *
 * On PostgreSQL: the full-text side is a `tsvector` column with a GIN index, ranked by `ts_rank_cd`;
 * vectors are `bytea` rows of the same layout, ranked by the exact scan here (no pgvector assumed).
 */
import { type RawBuilder, sql } from 'kysely';
import { isPostgres } from './dialect.ts';
import type { Db } from './schema.ts';
import { queryWords } from '../services/search/query-words.ts';

export interface ChunkIn {
  position: number;
  text: string;
  meta: Record<string, unknown>;
}
export interface ChunkRow {
  id: number;
  index_id: string;
  doc_id: string;
  position: number;
  text: string;
  meta: Record<string, unknown>;
}

const vectorTable = (dims: number) => `retrieval_vectors_${dims}`;
const vectorIndex = (dims: number) => `retrieval_vectors_${dims}_idx`;
const toBytes = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

/** Whether this database has libSQL's vector functions (probed once per connection). */
const vectorSupport = new WeakMap<Db, Promise<boolean>>();
export function hasVectorFunctions(db: Db): Promise<boolean> {
  let p = vectorSupport.get(db);
  if (!p) {
    p = isPostgres(db)
      ? Promise.resolve(false)
      : sql`select vector_extract(vector32('[1,2]')) as v`.execute(db).then(() => true, () => false);
    vectorSupport.set(db, p);
  }
  return p;
}

/** Inserts chunks and their full-text rows in one transaction; returns the chunk ids in order. */
export async function insertChunks(db: Db, indexId: string, docId: string, chunks: ChunkIn[]): Promise<number[]> {
  return db.transaction().execute(async (trx) => {
    const ids: number[] = [];
    for (const c of chunks) {
      const r = await trx.insertInto('retrieval_chunks')
        .values({ index_id: indexId, doc_id: docId, position: c.position, text: c.text, meta: JSON.stringify(c.meta), embedded_dims: null })
        .returning('id').executeTakeFirstOrThrow();
      const id = Number(r.id);
      await sql`insert into retrieval_fts (rowid, text) values (${id}, ${c.text})`.execute(trx);
      ids.push(id);
    }
    return ids;
  });
}

export async function ensureVectorTable(db: Db, dims: number): Promise<void> {
  if (!Number.isInteger(dims) || dims < 1 || dims > 65_536) throw new Error(`bad vector dimension ${dims}`);
  const blob = isPostgres(db) ? 'bytea' : `F32_BLOB(${dims})`;
  await sql.raw(
    `create table if not exists ${vectorTable(dims)} (chunk_id integer primary key, index_id text not null, embedding ${blob} not null)`,
  ).execute(db);
  await sql.raw(`create index if not exists ${vectorTable(dims)}_scope on ${vectorTable(dims)} (index_id)`).execute(db);
  if (await hasVectorFunctions(db)) await sql.raw(vectorIndexDdl(dims)).execute(db);
}

/**
 * The DiskANN index's parameters (measured in BENCHMARKS.md, "Vector store search"; explained in
 * docs/api/responses.md). Each node's block holds copies of its neighbours' vectors, and an insert rewrites
 * dozens of blocks, so the copies' size sets the insert cost: from 256 dimensions up they are kept as 1-bit
 * signs (a 384-dimension node's block shrinks from ~90 KB with libSQL's float32 default to ~4 KB); below
 * that, signs are too coarse to steer the walk (recall@10 about 0.1 on the tiny fixture model's 32-dimension
 * vectors) and 8-bit copies are small anyway. The copies only steer the walk: the visited nodes' own
 * float32 vectors rank the candidates, and annVectorSearch re-ranks them by the exact cosine. `search_l`
 * is the query's beam width and also the most candidates `vector_top_k` returns.
 */
export const VECTOR_INDEX_PARAMS = { maxNeighbors: 32, insertL: 40, searchL: 200, signsFromDims: 256 } as const;

export function vectorIndexDdl(dims: number): string {
  const p = VECTOR_INDEX_PARAMS;
  const copies = dims >= p.signsFromDims ? 'float1bit' : 'float8';
  return `create index if not exists ${vectorIndex(dims)} on ${vectorTable(dims)} (libsql_vector_idx(embedding, 'metric=cosine', ` +
    `'compress_neighbors=${copies}', 'max_neighbors=${p.maxNeighbors}', 'insert_l=${p.insertL}', 'search_l=${p.searchL}'))`;
}

/**
 * Rebuilds the vector index of every vector table with the current parameters (a migration runs this
 * when they change). Without libSQL's vector functions there is no index to rebuild.
 */
export async function rebuildVectorIndexes(db: Db): Promise<void> {
  if (!(await hasVectorFunctions(db))) return;
  for (const t of await vectorTables(db)) {
    const dims = Number(t.slice('retrieval_vectors_'.length));
    await sql.raw(`drop index if exists ${vectorIndex(dims)}`).execute(db);
    await sql.raw(vectorIndexDdl(dims)).execute(db);
  }
}

/** Stores vectors for chunks (all of one dimension) and marks the chunks embedded. */
export async function storeVectors(
  db: Db,
  dims: number,
  rows: { chunkId: number; indexId: string; vector: Float32Array }[],
): Promise<void> {
  await ensureVectorTable(db, dims);
  await db.transaction().execute(async (trx) => {
    for (const r of rows) {
      if (r.vector.length !== dims) throw new Error(`vector of ${r.vector.length} dimensions in a ${dims}-dimension table`);
      const bytes = toBytes(r.vector);
      if (isPostgres(trx)) {
        await sql`insert into ${sql.table(vectorTable(dims))} (chunk_id, index_id, embedding) values (${r.chunkId}, ${r.indexId}, ${bytes})
          on conflict (chunk_id) do update set index_id = excluded.index_id, embedding = excluded.embedding`.execute(trx);
      } else {
        await sql`insert or replace into ${
          sql.table(vectorTable(dims))
        } (chunk_id, index_id, embedding) values (${r.chunkId}, ${r.indexId}, ${bytes})`.execute(trx);
      }
    }
    const ids = rows.map((r) => r.chunkId);
    for (let i = 0; i < ids.length; i += 500) {
      await trx.updateTable('retrieval_chunks').set({ embedded_dims: dims }).where('id', 'in', ids.slice(i, i + 500)).execute();
    }
  });
}

export async function pendingChunks(db: Db, indexId: string, docId: string, limit: number): Promise<{ id: number; text: string }[]> {
  const rows = await db.selectFrom('retrieval_chunks').select(['id', 'text'])
    .where('index_id', '=', indexId).where('doc_id', '=', docId).where('embedded_dims', 'is', null)
    .orderBy('position').limit(limit).execute();
  return rows.map((r) => ({ id: Number(r.id), text: r.text }));
}

/** The most query words a full-text search matches. */
export const MAX_QUERY_WORDS = 64;

/**
 * A metadata filter as SQL over the chunk row aliased `c`, starting with ` and ` (store/search/filter-sql.ts
 * builds them for either dialect); absent = no filter.
 */
export type ChunkFilter = RawBuilder<unknown>;

/** BM25 ranking over the chunks of the given indexes; higher score = better. */
export async function ftsSearch(
  db: Db,
  indexIds: string[],
  query: string,
  limit: number,
  filter?: ChunkFilter,
): Promise<{ id: number; score: number }[]> {
  const words = queryWords(query, MAX_QUERY_WORDS);
  if (!words.length || indexIds.length === 0) return [];
  if (isPostgres(db)) return tsvectorSearch(db, indexIds, words, limit, filter);
  // FTS5: each word a quoted term, any of them may match (BM25 ranks)
  const q = words.map((w) => `"${w}"`).join(' OR ');
  const r = await sql<{ id: number; rank: number }>`
    select c.id as id, bm25(retrieval_fts) as rank from retrieval_fts
    join retrieval_chunks c on c.id = retrieval_fts.rowid
    where retrieval_fts match ${q} and c.index_id in (${sql.join(indexIds)})${filter ?? sql``}
    order by rank limit ${limit}`.execute(db);
  // FTS5's bm25() is negative, smaller = better
  return r.rows.map((x) => ({ id: Number(x.id), score: -Number(x.rank) }));
}

/** PostgreSQL's full text: any of the words may match (OR), ranked by cover density. */
async function tsvectorSearch(db: Db, indexIds: string[], words: string[], limit: number, filter?: ChunkFilter) {
  // Each word quoted as a tsquery lexeme, so no character of the query is read as tsquery syntax.
  const tsq = words.map((w) => `'${w}'`).join(' | ');
  const r = await sql<{ id: number; rank: number }>`
    select c.id as id, ts_rank_cd(f.tsv, to_tsquery('simple', ${tsq})) as rank from retrieval_fts f
    join retrieval_chunks c on c.id = f.rowid
    where f.tsv @@ to_tsquery('simple', ${tsq}) and c.index_id in (${sql.join(indexIds)})${filter ?? sql``}
    order by rank desc limit ${limit}`.execute(db);
  return r.rows.map((x) => ({ id: Number(x.id), score: Number(x.rank) }));
}

/** Embedded chunks in scope and in the whole table of that dimension. */
export async function vectorCounts(db: Db, dims: number, indexIds: string[]): Promise<{ scope: number; total: number }> {
  if (!(await vectorTableExists(db, dims))) return { scope: 0, total: 0 };
  const t = sql.table(vectorTable(dims));
  const scope = await sql<{ n: number }>`select count(*) as n from ${t} where index_id in (${sql.join(indexIds)})`.execute(db);
  const total = await sql<{ n: number }>`select count(*) as n from ${t}`.execute(db);
  return { scope: Number(scope.rows[0]?.n ?? 0), total: Number(total.rows[0]?.n ?? 0) };
}

async function vectorTableExists(db: Db, dims: number): Promise<boolean> {
  if (isPostgres(db)) return (await vectorTables(db)).includes(vectorTable(dims));
  const r = await sql<{ n: number }>`select count(*) as n from sqlite_master where type = 'table' and name = ${vectorTable(dims)}`.execute(
    db,
  );
  return Number(r.rows[0]?.n ?? 0) > 0;
}

/** Whether any chunk of these indexes has a vector yet (the query is embedded only then). */
export async function anyEmbedded(db: Db, indexIds: string[]): Promise<boolean> {
  const r = await db.selectFrom('retrieval_chunks').select('id').where('index_id', 'in', indexIds).where('embedded_dims', 'is not', null)
    .limit(1).executeTakeFirst();
  return r !== undefined;
}

export type VectorHit = { id: number; distance: number };

/** Exact cosine ranking of every vector in scope: in SQL where libSQL's functions exist, else here. */
export async function exactVectorSearch(
  db: Db,
  dims: number,
  indexIds: string[],
  query: Float32Array,
  limit: number,
  filter?: ChunkFilter,
): Promise<VectorHit[]> {
  if (!(await vectorTableExists(db, dims)) || indexIds.length === 0) return [];
  const t = sql.table(vectorTable(dims));
  const join = filter ? sql` join retrieval_chunks c on c.id = v.chunk_id` : sql``;
  if (await hasVectorFunctions(db)) {
    const r = await sql<{ id: number; d: number }>`
      select v.chunk_id as id, vector_distance_cos(v.embedding, vector32(${toBytes(query)})) as d from ${t} v${join}
      where v.index_id in (${sql.join(indexIds)})${filter ?? sql``} order by d limit ${limit}`.execute(db);
    return r.rows.map((x) => ({ id: Number(x.id), distance: Number(x.d) }));
  }
  const r = await sql<
    { id: number; e: ArrayBuffer | Uint8Array }
  >`select v.chunk_id as id, v.embedding as e from ${t} v${join} where v.index_id in (${sql.join(indexIds)})${filter ?? sql``}`.execute(db);
  const qn = norm(query);
  const hits = r.rows.map((x) => ({ id: Number(x.id), distance: 1 - dot(asFloats(x.e), query) / (norm(asFloats(x.e)) * qn || 1) }));
  return hits.sort((a, b) => a.distance - b.distance).slice(0, limit);
}

/**
 * Approximate nearest neighbours through the DiskANN index (`vector_top_k`): `candidates` from the whole
 * table (at most `search_l` come back), those in scope re-ranked by the exact cosine of their stored
 * float32 vectors. Null where the index is unavailable.
 */
export async function annVectorSearch(
  db: Db,
  dims: number,
  indexIds: string[],
  query: Float32Array,
  limit: number,
  candidates: number,
): Promise<VectorHit[] | null> {
  if (!(await hasVectorFunctions(db)) || !(await vectorTableExists(db, dims))) return null;
  const q = toBytes(query);
  const r = await sql<{ id: number; d: number }>`
    select v.chunk_id as id, vector_distance_cos(v.embedding, vector32(${q})) as d
    from vector_top_k(${vectorIndex(dims)}, vector32(${q}), ${candidates}) k
    join ${sql.table(vectorTable(dims))} v on v.rowid = k.id
    where v.index_id in (${sql.join(indexIds)}) order by d limit ${limit}`.execute(db);
  return r.rows.map((x) => ({ id: Number(x.id), distance: Number(x.d) }));
}

export async function chunksByIds(db: Db, ids: number[]): Promise<Map<number, ChunkRow>> {
  const out = new Map<number, ChunkRow>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await db.selectFrom('retrieval_chunks').selectAll().where('id', 'in', ids.slice(i, i + 500)).execute();
    for (const r of rows) out.set(Number(r.id), { ...r, id: Number(r.id), position: Number(r.position), meta: JSON.parse(r.meta) });
  }
  return out;
}

async function vectorTables(db: Db): Promise<string[]> {
  if (isPostgres(db)) {
    const r = await sql<
      { name: string }
    >`select tablename as name from pg_tables where schemaname = current_schema() and tablename like 'retrieval_vectors_%'`.execute(db);
    return r.rows.map((x) => x.name).filter((n) => /^retrieval_vectors_\d+$/.test(n));
  }
  const r = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name like 'retrieval_vectors_%'`.execute(
    db,
  );
  return r.rows.map((x) => x.name).filter((n) => /^retrieval_vectors_\d+$/.test(n));
}

/** Removes the chunks (full-text rows and vectors too) of one document, or of a whole index when docId is absent. */
export async function deleteChunks(db: Db, indexId: string, docId?: string): Promise<void> {
  const tables = await vectorTables(db);
  await db.transaction().execute(async (trx) => {
    const docFilter = docId === undefined ? sql`` : sql` and doc_id = ${docId}`;
    const ids = sql`select id from retrieval_chunks where index_id = ${indexId}${docFilter}`;
    await sql`delete from retrieval_fts where rowid in (${ids})`.execute(trx);
    for (const t of tables) await sql`delete from ${sql.table(t)} where chunk_id in (${ids})`.execute(trx);
    await sql`delete from retrieval_chunks where index_id = ${indexId}${docFilter}`.execute(trx);
  });
}

export async function chunkCount(db: Db, indexId: string, docId: string): Promise<number> {
  const r = await db.selectFrom('retrieval_chunks').select((eb) => eb.fn.countAll<number>().as('n')).where('index_id', '=', indexId).where(
    'doc_id',
    '=',
    docId,
  ).executeTakeFirst();
  return Number(r?.n ?? 0);
}

const asFloats = (
  b: ArrayBuffer | Uint8Array,
) => (b instanceof Uint8Array ? new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)) : new Float32Array(b));
function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}
const norm = (a: Float32Array) => Math.sqrt(dot(a, a));

/** Rewrites one document's chunk metadata (e.g. its attributes changed); the text and vectors stay. */
export async function updateChunkMeta(db: Db, indexId: string, docId: string, patch: Record<string, unknown>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const r = await sql<
      { id: number; meta: string }
    >`select id, meta from retrieval_chunks where index_id = ${indexId} and doc_id = ${docId}`.execute(trx);
    for (const row of r.rows) {
      const meta = { ...(typeof row.meta === 'string' ? JSON.parse(row.meta) : row.meta), ...patch };
      await sql`update retrieval_chunks set meta = ${JSON.stringify(meta)} where id = ${row.id}`.execute(trx);
    }
  });
}

/** The chunks of one document in order (its parsed text). */
export async function documentChunks(db: Db, indexId: string, docId: string): Promise<{ text: string; meta: Record<string, unknown> }[]> {
  const r = await sql<
    { text: string; meta: string }
  >`select text, meta from retrieval_chunks where index_id = ${indexId} and doc_id = ${docId} order by position`.execute(db);
  return r.rows.map((x) => ({ text: x.text, meta: typeof x.meta === 'string' ? JSON.parse(x.meta) : x.meta }));
}

/** Documents of an index whose chunks were stored without a `metadata` entry (written before it existed). */
export async function docsWithoutMetadata(db: Db, indexId: string): Promise<string[]> {
  const r = await sql<
    { doc_id: string }
  >`select distinct doc_id from retrieval_chunks where index_id = ${indexId} and meta not like ${'%"metadata":%'}`.execute(db);
  return r.rows.map((x) => x.doc_id);
}
