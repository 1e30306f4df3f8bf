/**
 * How the DiskANN index's parameters trade insert speed for recall: the same N vectors (default 10k,
 * 384 dimensions, test/support/embedding-corpus.ts) inserted through the engine's storage (`storeVectors`,
 * 16 per transaction as the embedding job stores them, and once 1000) into an index made with each parameter set, then
 * Q queries ranked by the index (`annVectorSearch`, 200 candidates re-ranked exactly) and by an exact scan.
 * The engine's own set is the one `vectorIndexDdl` makes; the others are made here before the first insert,
 * under the same index name, so the engine's `create … if not exists` finds them.
 *
 *   node --import tsx scripts/bench/search-ann.ts [vectors=10000] [queries=100]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { sql } from 'kysely';
import { openStore } from '../../src/store/db.ts';
import { annVectorSearch, exactVectorSearch, insertChunks, storeVectors, vectorIndexDdl } from '../../src/store/retrieval.ts';
import { embeddingCorpus } from '../../test/support/embedding-corpus.ts';
import { writeSection } from './write-benchmarks.mjs';

const N = Number(process.argv[2] ?? 10_000);
const Q = Number(process.argv[3] ?? 100);
const DIMS = 384;
const load = loadavg().map((x) => x.toFixed(2)).join(' ');
console.error(`load average at start: ${load}`);
const corpus = embeddingCorpus({ dims: DIMS, topics: 64, clusters: Math.max(50, Math.round(N / 50)), rank: 24, shared: 0.6, seed: 11 });
const vectors = Array.from({ length: N }, corpus.draw);
const queries = Array.from({ length: Q }, corpus.draw);

const variants = [
  { name: "libSQL's defaults (float32 copies, ≈ 3·√d neighbours, insert_l 70)", params: "'metric=cosine'" },
  {
    name: 'before this change (float8 copies, 32 neighbours, insert_l 70)',
    params: "'metric=cosine', 'compress_neighbors=float8', 'max_neighbors=32'",
  },
  {
    name: 'float8 copies, 32 neighbours, insert_l 40',
    params: "'metric=cosine', 'compress_neighbors=float8', 'max_neighbors=32', 'insert_l=40'",
  },
  { name: "**the engine's** (float1bit copies, 32 neighbours, insert_l 40, search_l 200)", params: null },
  { name: "the engine's, 1000 vectors per transaction instead of 16", params: null, batch: 1000 },
];

const rows: string[] = [];
for (const v of variants) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-ann-'));
  const file = join(dir, 'ann.db');
  const store = await openStore(`file:${file}`);
  if (v.params) {
    await sql.raw(
      `create table retrieval_vectors_${DIMS} (chunk_id integer primary key, index_id text not null, embedding F32_BLOB(${DIMS}) not null)`,
    )
      .execute(store.db);
    await sql.raw(`create index retrieval_vectors_${DIMS}_idx on retrieval_vectors_${DIMS} (libsql_vector_idx(embedding, ${v.params}))`)
      .execute(
        store.db,
      );
  }
  const ids = await insertChunks(store.db, 'ann', 'd', vectors.map((_, i) => ({ position: i, text: `chunk ${i}`, meta: {} })));
  const t0 = performance.now();
  const batch = v.batch ?? 16;
  for (let b = 0; b < N; b += batch) {
    await storeVectors(store.db, DIMS, ids.slice(b, b + batch).map((id, i) => ({ chunkId: id, indexId: 'ann', vector: vectors[b + i]! })));
  }
  const insertMs = performance.now() - t0;
  const ddl = (await sql<{ sql: string }>`select sql from sqlite_master where name = ${`retrieval_vectors_${DIMS}_idx`}`.execute(store.db))
    .rows[0]!.sql;
  const engineDdl = vectorIndexDdl(DIMS);
  if (!v.params && !ddl.endsWith(engineDdl.slice(engineDdl.indexOf('libsql_vector_idx')))) throw new Error(`unexpected index: ${ddl}`);
  let recall = 0;
  const times: number[] = [];
  for (const q of queries) {
    const truth = new Set((await exactVectorSearch(store.db, DIMS, ['ann'], q, 10)).map((h) => h.id));
    const t = performance.now();
    const hits = (await annVectorSearch(store.db, DIMS, ['ann'], q, 10, 200)) ?? [];
    times.push(performance.now() - t);
    recall += hits.filter((h) => truth.has(h.id)).length / 10 / Q;
  }
  await store.close();
  const mib = [file, `${file}-wal`].reduce((s, f) => s + (statSync(f, { throwIfNoEntry: false })?.size ?? 0), 0) / 2 ** 20;
  rmSync(dir, { recursive: true, force: true });
  const p50 = times.sort((a, b) => a - b)[Math.floor(Q / 2)]!;
  rows.push(`| ${v.name} | ${Math.round(N / (insertMs / 1000))} | ${recall.toFixed(3)} | ${p50.toFixed(1)} | ${mib.toFixed(0)} |`);
  console.error(rows.at(-1));
}
const table = [
  '| index parameters | inserts/s | recall@10 vs exact | query p50 ms | MiB on disk |',
  '| --- | ---: | ---: | ---: | ---: |',
  ...rows,
].join('\n');
console.log(table);
writeSection(
  'Search: vector index parameters (scripts/bench/search-ann.ts)',
  `\`node --import tsx scripts/bench/search-ann.ts ${N} ${Q}\` (run with nothing else on the machine; load average at start ${load}): the same ${N} vectors (${DIMS} dims, the anisotropic mixture of test/support/embedding-corpus.ts with ${corpus.clusters} clusters) inserted through \`storeVectors\` into each index, 16 per transaction (the embedding job's batch) unless said otherwise, ${Q} fresh queries; every query asks \`vector_top_k\` for 200 candidates and re-ranks them exactly. libSQL file, Node ${process.version}, 2 cores.

${table}

Where every set finds the true top 10, the choice is made by insert speed and size; the engine's set at 100k chunks is measured in "Vector store search". Below 256 dimensions the engine keeps 8-bit copies instead of signs: 1-bit copies could not steer the walk on the tiny fixture model's 32-dimension vectors (test/services/retrieval/vector-index.test.ts holds that case).`,
);
