/**
 * Search at scale on both cluster kinds: N generated chunks (default 100k) indexed in a fresh libSQL file
 * and in a throw-away PostgreSQL 15 (initdb + pg_ctl, as the tests start it) through the search backends,
 * then labelled queries per mode. Prints indexing throughput, p50/p95 latency of keyword, vector, hybrid
 * and hybrid + rerank, and NDCG@10 per mode from the labels. Writes BENCHMARKS.md.
 *
 * The corpus ("public-style": Zipf filler words, topics with two synonym vocabularies, a unique part
 * number per chunk, words of other topics as noise) comes with its vectors: 384 dimensions drawn around
 * one centre per topic (per-dimension spread 0.04, so a chunk's cosine to its centre is about 0.75), like
 * sentence embeddings of on-topic text. A query names a topic in words and,
 * for half of the queries, a chunk's part number; labels: that chunk 2, other chunks of the topic 1.
 * The vectors stand in for an embedding model (none can be downloaded here; embedding throughput is
 * measured by scripts/bench/vector-search.ts). The reranker is the tiny random fixture cross-encoder
 * (the catalog's ms-marco model cannot be downloaded here): its row measures cost, not quality.
 *
 *   node --import tsx scripts/bench/search.ts [chunks=100000] [queries=60] [pgVectorQueries=12]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { createInferenceEngine } from '../../src/services/inference/engine.ts';
import { openStore } from '../../src/store/db.ts';
import { LibsqlBackend } from '../../src/services/search/libsql-backend.ts';
import { PgBackend } from '../../src/services/search/pg-backend.ts';
import type { SearchBackend } from '../../src/services/search/backend.ts';
import type { SearchMode } from '../../src/services/retrieval/engine.ts';
import { startPostgres } from '../../test/support/postgres-search.ts';
import { writeSection } from './write-benchmarks.mjs';
import { fixtureModel, machineNote, median, seededVectors } from './helpers.ts';

const N = Number(process.argv[2] ?? 100_000);
const Q = Number(process.argv[3] ?? 60);
const QPG = Number(process.argv[4] ?? 12);
const DIMS = 384;
const TOPICS = Math.max(10, Math.round(N / 50));
const PER_DOC = 1000;
const INDEX = 'scol_bench';

const { rand, normal, unit, around } = seededVectors(7);
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
const FILLER = Array.from({ length: 5000 }, (_, i) => `f${i.toString(36)}`);
const filler = () => FILLER[Math.floor(rand() ** 3 * FILLER.length)]!;
const words = (t: number, side: 'a' | 'b') => Array.from({ length: 6 }, (_, i) => `t${t.toString(36)}${side}${i}`);

// corpus
const centres = Array.from({ length: TOPICS }, () => unit(Float32Array.from({ length: DIMS }, normal)));
const topicOf = new Int32Array(N);
const texts: string[] = [];
const vectors: Float32Array[] = [];
for (let i = 0; i < N; i++) {
  const t = Math.floor(rand() * TOPICS);
  topicOf[i] = t;
  const own = [...words(t, 'a'), ...words(t, 'b')];
  const noise = [pick(words(Math.floor(rand() * TOPICS), rand() < 0.5 ? 'a' : 'b')), pick(words(Math.floor(rand() * TOPICS), 'a'))];
  const body = [...Array.from({ length: 40 }, filler), pick(own), pick(own), pick(own), ...noise, `pn${i.toString(36)}`];
  for (let k = body.length - 1; k > 0; k--) {
    const j = Math.floor(rand() * (k + 1));
    [body[k], body[j]] = [body[j]!, body[k]!];
  }
  texts.push(body.join(' '));
  vectors.push(around(centres[t]!, 0.04));
}
const byTopic = new Map<number, number[]>();
topicOf.forEach((t, i) => byTopic.set(t, [...(byTopic.get(t) ?? []), i]));

// labelled queries: topic words (either vocabulary), and for half a chunk's part number
interface LabelledQuery {
  text: string;
  vector: Float32Array;
  rel: Map<number, number>;
}
const queries: LabelledQuery[] = Array.from({ length: Q }, (_, q) => {
  const target = Math.floor(rand() * N);
  const t = topicOf[target]!;
  const ws = [pick(words(t, rand() < 0.5 ? 'a' : 'b')), pick(words(t, 'a'))];
  const text = (q % 2 === 0 ? [...ws, `pn${target.toString(36)}`] : ws).join(' ');
  const rel = new Map<number, number>(byTopic.get(t)!.map((i) => [i, 1]));
  if (q % 2 === 0) rel.set(target, 2);
  return { text, vector: around(centres[t]!, 0.03), rel };
});
const queryVector = new Map(queries.map((q) => [q.text, q.vector]));
const embedder = async (_m: string, ts: string[]) => ts.map((t) => queryVector.get(t) ?? unit(Float32Array.from({ length: DIMS }, normal)));

function ndcg10(ranked: number[], rel: Map<number, number>): number {
  const dcg = ranked.slice(0, 10).reduce((s, id, i) => s + (2 ** (rel.get(id) ?? 0) - 1) / Math.log2(i + 2), 0);
  const ideal = [...rel.values()].sort((a, b) => b - a).slice(0, 10).reduce((s, g, i) => s + (2 ** g - 1) / Math.log2(i + 2), 0);
  return dcg / ideal;
}

// the reranker: the tiny fixture cross-encoder through the inference engine
const inference = createInferenceEngine({ ...loadConfig(new Map(), {}), backend: 'cpu' as const });
const rerankSpec = fixtureModel('tiny-bert-reranker', 'text-classification');
const RERANK_CANDIDATES = 20;

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-search-'));
const libStore = await openStore(`file:${join(dir, 'bench.db')}`);
const libsql = new LibsqlBackend(libStore.db, embedder);
const pg = await startPostgres();
const postgres = await PgBackend.open(pg.url, embedder);

// chunk position → doc/position; ids map back to the corpus index through doc and position
const docOf = (i: number) => `d${Math.floor(i / PER_DOC)}`;
const corpusIndex = (docId: string, position: number) => Number(docId.slice(1)) * PER_DOC + position;

async function indexLibsql(): Promise<{ textMs: number; vecMs: number }> {
  // the vector table without the DiskANN index: building it at 100k takes far longer than this run (see the
  // vector store section); vector queries here are exact scans, as on PostgreSQL without pgvector
  await sql.raw(
    `create table if not exists retrieval_vectors_${DIMS} (chunk_id integer primary key, index_id text not null, embedding F32_BLOB(${DIMS}) not null)`,
  ).execute(libStore.db);
  let textMs = 0, vecMs = 0;
  for (let b = 0; b < N; b += PER_DOC) {
    const n = Math.min(PER_DOC, N - b);
    let t = performance.now();
    await libsql.putDocument(
      INDEX,
      docOf(b),
      Array.from({ length: n }, (_, k) => ({ position: k, text: texts[b + k]!, meta: { metadata: { topic: topicOf[b + k] } } })),
    );
    textMs += performance.now() - t;
    const ids = await libStore.db.selectFrom('retrieval_chunks').select(['id', 'position']).where('index_id', '=', INDEX).where(
      'doc_id',
      '=',
      docOf(b),
    ).execute();
    t = performance.now();
    await libStore.db.transaction().execute(async (trx) => {
      for (const r of ids) {
        const v = vectors[b + Number(r.position)]!;
        await sql`insert into ${sql.table(`retrieval_vectors_${DIMS}`)} (chunk_id, index_id, embedding) values (${
          Number(r.id)
        }, ${INDEX}, ${new Uint8Array(v.buffer, v.byteOffset, v.byteLength)})`.execute(trx);
      }
      await trx.updateTable('retrieval_chunks').set({ embedded_dims: DIMS }).where('index_id', '=', INDEX).where('doc_id', '=', docOf(b))
        .execute();
    });
    vecMs += performance.now() - t;
    if ((b / PER_DOC) % 20 === 0) process.stderr.write(`libsql indexed ${b + n}/${N}\n`);
  }
  return { textMs, vecMs };
}

async function indexPg(): Promise<{ textMs: number; vecMs: number }> {
  let textMs = 0, vecMs = 0;
  for (let b = 0; b < N; b += PER_DOC) {
    const n = Math.min(PER_DOC, N - b);
    let t = performance.now();
    await postgres.putDocument(
      INDEX,
      docOf(b),
      Array.from({ length: n }, (_, k) => ({ position: k, text: texts[b + k]!, meta: { metadata: { topic: topicOf[b + k] } } })),
    );
    textMs += performance.now() - t;
    const rows = await postgres.store.pending(INDEX, docOf(b), PER_DOC + 1);
    const pos = await sql<{ id: number; position: number }>`select id, position from search_chunks where index_id = ${INDEX} and doc_id = ${
      docOf(b)
    }`.execute(postgres.store.db);
    const posOf = new Map(pos.rows.map((r) => [Number(r.id), Number(r.position)]));
    t = performance.now();
    await postgres.store.storeVectors(rows.map((r) => ({ id: r.id, vector: vectors[b + posOf.get(r.id)!]! })));
    vecMs += performance.now() - t;
    if ((b / PER_DOC) % 20 === 0) process.stderr.write(`postgres indexed ${b + n}/${N}\n`);
  }
  return { textMs, vecMs };
}

await postgres.status(); // connect and create the tables before the long indexing
const pgIndexing = await indexPg();
const indexing = { postgres: pgIndexing, libsql: await indexLibsql() };
await sql`analyze`.execute(postgres.store.db);

type Mode = SearchMode | 'hybrid+rerank';
const MODES: Mode[] = ['keyword', 'semantic', 'hybrid', 'hybrid+rerank'];
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function run(b: SearchBackend, mode: Mode, q: LabelledQuery): Promise<number[]> {
  const m: SearchMode = mode === 'hybrid+rerank' ? 'hybrid' : mode;
  const hits = await b.search([INDEX], q.text, {
    mode: m,
    limit: mode === 'hybrid+rerank' ? RERANK_CANDIDATES : 10,
    model: 'bench',
    semanticWeight: m === 'keyword' ? 0 : m === 'semantic' ? 1 : 0.5,
    exactVectors: true,
  });
  let ids = hits.map((h) => corpusIndex(h.chunk.doc_id, h.chunk.position));
  if (mode === 'hybrid+rerank' && hits.length) {
    const scores = await inference.rerank(rerankSpec, q.text, hits.map((h) => h.chunk.text));
    ids = ids.map((id, i) => ({ id, s: scores[i]!.score })).sort((a, c) => c.s - a.s).map((x) => x.id);
  }
  return ids.slice(0, 10);
}

await inference.rerank(rerankSpec, 'warm up', ['the model loads once']);
const results: Record<string, Record<string, { t: number[]; ndcg: number[] }>> = {};
const backends: [string, SearchBackend, number][] = [['libsql', libsql, Q], ['postgres', postgres, QPG]];
for (const [name] of backends) results[name] = Object.fromEntries(MODES.map((m) => [m, { t: [], ndcg: [] }]));
// interleaved: each query runs every mode on each backend before the next query
for (let qi = 0; qi < Q; qi++) {
  const q = queries[qi]!;
  for (const [name, b, limitQ] of backends) {
    for (const mode of MODES) {
      if (mode !== 'keyword' && qi >= limitQ) continue;
      const t = performance.now();
      const ids = await run(b, mode, q);
      results[name]![mode]!.t.push(performance.now() - t);
      results[name]![mode]!.ndcg.push(ndcg10(ids, q.rel));
    }
  }
  if (qi % 10 === 0) process.stderr.write(`query ${qi}/${Q}\n`);
}

const f = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const perS = (ms: number) => Math.round(N / (ms / 1000));
const status = { libsql: await libsql.status(), postgres: await postgres.status() };
const lines = [
  '| cluster | indexing: chunks + full text | indexing: vectors | vectors served by |',
  '| --- | --- | --- | --- |',
  ...(['libsql', 'postgres'] as const).map((k) =>
    `| ${k} | ${perS(indexing[k].textMs)} chunks/s | ${perS(indexing[k].vecMs)} vectors/s | ${
      k === 'libsql' ? 'exact scan (vector_distance_cos; no DiskANN index at this size)' : status.postgres.vectors
    } |`
  ),
  '',
  '| cluster | mode | queries | p50 ms | p95 ms | NDCG@10 |',
  '| --- | --- | --- | --- | --- | --- |',
  ...backends.flatMap(([name]) =>
    MODES.map((m) => {
      const r = results[name]![m]!;
      return `| ${name} | ${m} | ${r.t.length} | ${f(median(r.t))} | ${f(pct(r.t, 0.95))} | ${mean(r.ndcg).toFixed(3)} |`;
    })
  ),
];
const table = lines.join('\n');
console.log(table);
writeSection(
  'Search: keyword, vector, hybrid, rerank on libSQL and PostgreSQL (scripts/bench/search.ts)',
  `\`node --import tsx scripts/bench/search.ts ${N} ${Q} ${QPG}\`: ${N} generated chunks (${TOPICS} topics, ${DIMS}-dimension vectors around topic centres), labelled queries (half name a chunk's part number), modes interleaved per query; PostgreSQL 15 from Debian (no pgvector: every vector of the scope fetched and scanned exactly in the process), libSQL file through @libsql/client; ${machineNote()}. PostgreSQL vector modes ran on the first ${QPG} queries only (each is an exact scan of all ${N} vectors).

${table}

Rerank: the top ${RERANK_CANDIDATES} hybrid candidates rescored by the tiny random fixture cross-encoder (the catalog's ms-marco-minilm cannot be downloaded here), so the hybrid+rerank NDCG says nothing about a trained reranker; its latency is the cost of the step. The vectors are generated with the corpus (no embedding model in the loop). NDCG@10 labels: the chunk whose part number the query names = 2, other chunks of the query's topic = 1.`,
);
await inference.close();
await postgres.close();
await libStore.close();
await pg.stop();
rmSync(dir, { recursive: true, force: true });
