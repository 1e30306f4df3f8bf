/**
 * The retrieval engine gives the same answers on libSQL (Node: vector functions and FTS5) and on Bun's
 * built-in SQLite (what the compiled binary uses: no vector functions, so vectors are scanned exactly in
 * the process), and the answers are the right ones: BM25 puts the chunk holding both words first, the
 * semantic ranking equals a cosine ranking computed here, and deleting an index leaves other indexes alone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { it } from 'node:test';

const probe = 'test/services/retrieval/retrieval-probe.ts';
const run = (cmd: string, args: string[]) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' } });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
};

it('libSQL and bun:sqlite agree, and both are right', () => {
  const node = run(process.execPath, ['--import', 'tsx', probe]);
  const bun = run('node_modules/.bin/bun', [probe, 'builtin']);
  assert.equal(node.vectorFunctions, true);
  assert.equal(bun.vectorFunctions, false);
  // reference ranking: cosine of the probe's vectors against chunk 3's
  const DIMS = 8;
  const vec = (i: number) => Array.from({ length: DIMS }, (_, d) => (d === i % DIMS ? 1 : 0) + ((i * 7 + d * 3) % 11) / 40);
  const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b));
  const expected = Array.from({ length: 40 }, (_, i) => i).sort((a, b) => cos(vec(b), vec(3)) - cos(vec(a), vec(3)) || a - b).slice(0, 6);
  assert.deepEqual(node.semantic, expected);
  assert.equal(node.keyword[0], 8, 'chunk 8 holds both "zebras" and "topic3"');
  for (const k of ['keyword', 'semantic', 'hybrid', 'afterDelete']) assert.deepEqual(bun[k], node[k], k);
  assert.deepEqual(node.afterDelete, ['zebras elsewhere']);
});
