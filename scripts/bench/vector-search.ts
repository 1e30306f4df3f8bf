/**
 * Vector store retrieval at scale: N synthetic chunks (default 100k; text for BM25, 384-dimension vectors
 * drawn around 2,000 cluster centres like sentence embeddings) indexed in a fresh libSQL file through the
 * retrieval engine, then Q queries (perturbed chunk vectors) ranked by the DiskANN index (vector_top_k)
 * and by an exact scan of the same vectors, interleaved. Prints p50/p95 latency of both, recall@10 of the
 * index against the exact scan, hybrid (BM25 + index, RRF) latency, and indexing throughput with the
 * embedding model's share measured on the tiny fixture embedding model. Writes BENCHMARKS.md.
 *
 *   node --import tsx scripts/bench/vector-search.ts [chunks=100000] [queries=200]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { createInferenceEngine } from '../../src/services/inference/engine.ts';
import { RetrievalEngine } from '../../src/services/retrieval/engine.ts';
import { openStore } from '../../src/store/db.ts';
import { storeVectors } from '../../src/store/retrieval.ts';
import { writeSection } from './write-benchmarks.mjs';

const N = Number(process.argv[2] ?? 100_000);
const Q = Number(process.argv[3] ?? 200);
const DIMS = 384;
const CENTRES = 2000;
const BATCH = 1000;

// deterministic generator (mulberry32) and normal draws (Box–Muller)
let seed = 42;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const normal = () => Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
const unit = (v: Float32Array) => {
  const n = Math.hypot(...v);
  for (let i = 0; i < v.length; i++) v[i]! /= n;
  return v;
};
const around = (c: Float32Array, spread: number) => unit(Float32Array.from(c, (x) => x + spread * normal()));
const centres = Array.from({ length: CENTRES }, () => unit(Float32Array.from({ length: DIMS }, normal)));
const WORDS = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
const text = () => Array.from({ length: 40 }, () => WORDS[Math.floor(rand() ** 2 * WORDS.length)]).join(' ');

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-vs-'));
const store = await openStore(`file:${join(dir, 'bench.db')}`);
const config = { ...loadConfig(new Map(), {}), backend: 'cpu' as const };
const inference = createInferenceEngine(config);
const embedSpec = {
  name: 'tiny-bert-embed',
  dir: 'test/fixtures/models/tiny-bert-embed',
  task: 'feature-extraction' as const,
  dtype: 'fp32' as const,
};
const engine = new RetrievalEngine(
  store.db,
  async (_m, texts) => (await inference.embed(embedSpec, texts)).vectors.map((v) => Float32Array.from(v)),
);
const INDEX = 'vs_bench';

// indexing: full-text rows and vectors, timed apart
const vectors: Float32Array[] = [];
let ftsMs = 0;
let vecMs = 0;
for (let b = 0; b < N; b += BATCH) {
  const n = Math.min(BATCH, N - b);
  const chunks = Array.from({ length: n }, (_, i) => ({ position: i, text: text(), meta: {} }));
  let t = performance.now();
  const ids = await engine.addDocument(INDEX, `doc${b / BATCH}`, chunks);
  ftsMs += performance.now() - t;
  const vs = ids.map(() => around(centres[Math.floor(rand() * CENTRES)]!, 0.35));
  vectors.push(...vs);
  t = performance.now();
  await storeVectors(store.db, DIMS, ids.map((id, i) => ({ chunkId: id, indexId: INDEX, vector: vs[i]! })));
  vecMs += performance.now() - t;
  if ((b / BATCH) % 10 === 0) process.stderr.write(`indexed ${b + n}/${N}\n`);
}

// the embedding model's share, on a sample of chunk texts with the tiny fixture model
const sample = Array.from({ length: 256 }, text);
await inference.embed(embedSpec, sample.slice(0, 4)); // load
const t0 = performance.now();
for (let i = 0; i < sample.length; i += 16) await inference.embed(embedSpec, sample.slice(i, i + 16));
const embedMsPerChunk = (performance.now() - t0) / sample.length;

// queries: exact and index interleaved
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const exactT: number[] = [];
const annT: number[] = [];
const hybridT: number[] = [];
let recall = 0;
for (let q = 0; q < Q; q++) {
  const query = around(vectors[Math.floor(rand() * vectors.length)]!, 0.2);
  let t = performance.now();
  const exact = await engine.semantic([INDEX], query, 10, 'exact');
  exactT.push(performance.now() - t);
  t = performance.now();
  const ann = await engine.semantic([INDEX], query, 10, 'auto');
  annT.push(performance.now() - t);
  const truth = new Set(exact.map((h) => h.id));
  recall += ann.filter((h) => truth.has(h.id)).length / 10;
  t = performance.now();
  const kw = await engine.keyword([INDEX], text().split(' ').slice(0, 4).join(' '), 40);
  void kw;
  hybridT.push(performance.now() - t + annT.at(-1)!);
}
recall /= Q;

const f = (x: number) => x.toFixed(1);
const chunksPerS = (ms: number) => Math.round(N / (ms / 1000));
const storeMsPerChunk = (ftsMs + vecMs) / N;
const rows = [
  `| chunks | ${N} (${DIMS} dims, ${CENTRES} clusters) |`,
  `| vector index (vector_top_k) p50 / p95 | ${f(pct(annT, 0.5))} / ${f(pct(annT, 0.95))} ms |`,
  `| exact scan (vector_distance_cos over all rows) p50 / p95 | ${f(pct(exactT, 0.5))} / ${f(pct(exactT, 0.95))} ms |`,
  `| index speed-up over the exact scan (p50) | ${(pct(exactT, 0.5) / pct(annT, 0.5)).toFixed(1)}× |`,
  `| recall@10 of the index against the exact scan | ${recall.toFixed(3)} |`,
  `| hybrid query (BM25 top 40 + index top 10, before fusion) p50 | ${f(pct(hybridT, 0.5))} ms |`,
  `| indexing: full-text rows (FTS5) | ${chunksPerS(ftsMs)} chunks/s |`,
  `| indexing: vectors into the DiskANN index | ${chunksPerS(vecMs)} chunks/s |`,
  `| embedding (tiny fixture model, batches of 16) | ${(1000 / embedMsPerChunk).toFixed(0)} chunks/s |`,
  `| embedding model's share of indexing time | ${((100 * embedMsPerChunk) / (embedMsPerChunk + storeMsPerChunk)).toFixed(0)}% |`,
];
const table = ['| measure | value |', '| --- | --- |', ...rows].join('\n');
console.log(table);
writeSection(
  'Vector store search (scripts/bench/vector-search.ts)',
  `\`node --import tsx scripts/bench/vector-search.ts ${N} ${Q}\`, ${Q} queries, exact and index interleaved, Node, libSQL file; the machine was shared with other engineers' work (2 cores), so latencies are noisy.\n\n${table}\n\nGoal: p50 < 20 ms at 100k chunks with recall@10 ≥ 0.95. The embedding share is the tiny fixture model's (a real embedding model is tens to hundreds of times slower per chunk, so its share only grows).`,
);
await inference.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
