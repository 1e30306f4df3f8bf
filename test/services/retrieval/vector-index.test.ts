/**
 * The libSQL vector index as the engine builds and queries it: recall@10 against an exact scan of the same
 * vectors (the reference ranking is a cosine computed here in float64, not by the database), on generated
 * embedding-like data and on a real model's output (the tiny fixture embedding model: 32 dimensions, all
 * alike in sign); and an index made with earlier parameters is rebuilt by the migration.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { embedTexts } from '../../../src/services/inference/embed.ts';
import { loadModel } from '../../../src/services/inference/load.ts';
import { RetrievalEngine } from '../../../src/services/retrieval/engine.ts';
import { openStore } from '../../../src/store/db.ts';
import { VECTOR_INDEX_PARAMS } from '../../../src/store/retrieval.ts';
import { embeddingCorpus } from '../../support/embedding-corpus.ts';
import { TINY_EMBED } from '../inference/fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-vector-index-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Top 10 by cosine, computed here in float64. */
function exactTop10(vectors: Float32Array[], ids: number[], q: Float32Array): Set<number> {
  const score = vectors.map((v) => {
    let d = 0, a = 0, b = 0;
    for (let i = 0; i < v.length; i++) (d += v[i]! * q[i]!), (a += v[i]! * v[i]!), (b += q[i]! * q[i]!);
    return d / Math.sqrt(a * b);
  });
  return new Set(ids.map((id, i) => [id, score[i]!] as const).sort((x, y) => y[1] - x[1]).slice(0, 10).map(([id]) => id));
}

/** Stores the vectors through the engine (as the background embedding does) and measures the index's recall@10. */
async function recallOf(name: string, vectors: Float32Array[], queries: Float32Array[]): Promise<number> {
  const store = await openStore(`file:${join(dir, `${name}.db`)}`);
  try {
    const byText = new Map(vectors.map((v, i) => [`chunk ${i}`, v]));
    const engine = new RetrievalEngine(store.db, async (_m, texts) => texts.map((t) => byText.get(t)!));
    const ids = await engine.addDocument('idx', 'doc', [...byText.keys()].map((text, position) => ({ position, text, meta: {} })));
    assert.equal(await engine.embedDocument('idx', 'doc', 'm'), vectors.length);
    let recall = 0;
    for (const q of queries) {
      const truth = exactTop10(vectors, ids, q);
      const hits = await engine.semantic(['idx'], q, 10, 'ann'); // the index, whatever the scope's size
      assert.equal(hits.length, 10);
      recall += hits.filter((h) => truth.has(h.id)).length / 10 / queries.length;
    }
    return recall;
  } finally {
    await store.close();
  }
}

describe('vector index', () => {
  it('recall@10 ≥ 0.95 against an exact scan on embedding-like 384-dimension vectors', async () => {
    const corpus = embeddingCorpus({ dims: 384, topics: 16, clusters: 60, rank: 24, shared: 0.6, seed: 5 });
    const vectors = Array.from({ length: 1500 }, corpus.draw);
    const recall = await recallOf('mixture', vectors, Array.from({ length: 40 }, corpus.draw));
    assert.ok(recall >= 0.95, `recall@10 ${recall}`);
  });

  it("recall@10 ≥ 0.95 on an embedding model's own low-dimension output (the tiny fixture model, 32 dimensions)", async () => {
    // its vectors are alike in sign: 1-bit neighbour copies could not steer the walk here (recall 0.15)
    const model = await loadModel(TINY_EMBED, 'feature-extraction', { backend: 'cpu', dtype: 'fp32' });
    let seed = 3;
    const rand = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const words = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}`);
    const text = (n: number) => Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]).join(' ');
    const embed = async (texts: string[]) => (await embedTexts(model, texts)).vectors.map((v) => Float32Array.from(v));
    const vectors = await embed(Array.from({ length: 400 }, () => text(30)));
    assert.equal(vectors[0]!.length, 32);
    const recall = await recallOf('tiny-model', vectors, await embed(Array.from({ length: 40 }, () => text(6))));
    assert.ok(recall >= 0.95, `recall@10 ${recall}`);
  });

  it('an index made with earlier parameters is rebuilt by the migration, keeping every vector findable', async () => {
    const file = `file:${join(dir, 'old.db')}`;
    let store = await openStore(file);
    const vectors = Array.from(
      { length: 50 },
      (_, i) => Float32Array.from({ length: 8 }, (_, d) => (d === i % 8 ? 1 : 0.1 * ((i * d) % 5))),
    );
    const byText = new Map(vectors.map((v, i) => [`c${i}`, v]));
    const engine = new RetrievalEngine(store.db, async (_m, texts) => texts.map((t) => byText.get(t)!));
    await engine.addDocument('idx', 'doc', [...byText.keys()].map((text, position) => ({ position, text, meta: {} })));
    await engine.embedDocument('idx', 'doc', 'm');
    // what a database written before the change holds: the earlier index, migration 10 not applied
    await sql.raw('drop index retrieval_vectors_8_idx').execute(store.db);
    await sql.raw(
      "create index retrieval_vectors_8_idx on retrieval_vectors_8 (libsql_vector_idx(embedding, 'metric=cosine', 'compress_neighbors=float8', 'max_neighbors=32'))",
    ).execute(store.db);
    await sql`delete from schema_migrations where version = 10`.execute(store.db);
    await store.close();

    store = await openStore(file);
    try {
      const ddl = await sql<{ sql: string }>`select sql from sqlite_master where name = 'retrieval_vectors_8_idx'`.execute(store.db);
      assert.match(
        ddl.rows[0]!.sql,
        new RegExp(`'max_neighbors=${VECTOR_INDEX_PARAMS.maxNeighbors}'.*'search_l=${VECTOR_INDEX_PARAMS.searchL}'`),
      );
      assert.doesNotMatch(ddl.rows[0]!.sql, /float8', 'max_neighbors=32'\)/);
      const found = await sql<{ id: number }>`select id from vector_top_k('retrieval_vectors_8_idx', vector32(${new Uint8Array(
        vectors[7]!.buffer,
      )}), 50)`.execute(store.db);
      assert.equal(new Set(found.rows.map((r) => Number(r.id))).size, 50, 'every stored vector is in the rebuilt index');
    } finally {
      await store.close();
    }
  });
});
