/**
 * Runs the retrieval engine on a fixed data set and prints its answers as JSON: under Node on libSQL
 * (vector functions, FTS5), or with `builtin` under Bun on bun:sqlite (no vector functions: the exact scan
 * in the process). retrieval-engines.test.ts compares the two.
 */
import { Kysely } from 'kysely';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtinSqliteDialect } from '../../../src/runtime/sqlite.ts';
import { RetrievalEngine } from '../../../src/services/retrieval/engine.ts';
import { openStore } from '../../../src/store/db.ts';
import { migrate } from '../../../src/store/migrations.ts';
import { hasVectorFunctions, storeVectors } from '../../../src/store/retrieval.ts';
import type { Database } from '../../../src/store/schema.ts';

const builtin = process.argv.includes('builtin');
const dir = mkdtempSync(join(tmpdir(), 'svc-retrieval-probe-'));
const file = join(dir, 'p.db');
let db: Kysely<Database>;
if (builtin) {
  const dialect = await builtinSqliteDialect(file);
  if (!dialect) throw new Error('no built-in SQLite on this runtime');
  db = new Kysely<Database>({ dialect });
  await migrate(db);
} else db = (await openStore(`file:${file}`)).db;

// deterministic vectors: chunk i points mostly along axis i % 8
const DIMS = 8;
const vec = (i: number) => Float32Array.from({ length: DIMS }, (_, d) => (d === i % DIMS ? 1 : 0) + ((i * 7 + d * 3) % 11) / 40);
const texts = Array.from(
  { length: 40 },
  (_, i) => `chunk ${i} about ${['zebras', 'glaciers', 'coffee', 'harbours'][i % 4]} and topic${i % 5}`,
);
const engine = new RetrievalEngine(db, async (_m, ts) => ts.map((t) => vec(Number(/q(\d+)/.exec(t)?.[1] ?? 0))));
const ids = await engine.addDocument('idx_a', 'doc1', texts.map((text, position) => ({ position, text, meta: { n: position } })));
await engine.addDocument('idx_b', 'doc2', [{ position: 0, text: 'zebras elsewhere', meta: {} }]);
await storeVectors(db, DIMS, ids.map((id, i) => ({ chunkId: id, indexId: 'idx_a', vector: vec(i) })));
const pos = (hits: { chunk: { meta: Record<string, unknown> } }[]) => hits.map((h) => h.chunk.meta.n);
const out = {
  vectorFunctions: await hasVectorFunctions(db),
  keyword: pos(await engine.search(['idx_a'], 'zebras topic3', { limit: 5, mode: 'keyword' })),
  semantic: pos(await engine.search(['idx_a'], 'q3', { limit: 6, mode: 'semantic', model: 'm' })),
  hybrid: pos(await engine.search(['idx_a'], 'q3 zebras', { limit: 6, model: 'm' })),
};
await engine.deleteIndex('idx_a');
(out as Record<string, unknown>).afterDelete = (await engine.search(['idx_a', 'idx_b'], 'zebras', { limit: 5, mode: 'keyword' })).map((h) =>
  h.chunk.text
);
console.log(JSON.stringify(out));
await db.destroy();
rmSync(dir, { recursive: true, force: true });
