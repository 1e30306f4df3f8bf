import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { loadModel, type LoadedModel } from '../../../src/services/inference/load.ts';
import { embedTexts, meanPoolNormalize, chunkTokenIds } from '../../../src/services/inference/embed.ts';
import { scorePairs } from '../../../src/services/inference/rerank.ts';
import { TINY_EMBED, TINY_RERANKER } from './fixtures.ts';

let e: LoadedModel;
let r: LoadedModel;
before(async () => {
  e = await loadModel(TINY_EMBED, 'feature-extraction', { backend: 'cpu' });
  r = await loadModel(TINY_RERANKER, 'text-classification', { backend: 'cpu' });
});

const norm = (v: number[]) => Math.hypot(...v);
const close = (a: number[], b: number[], eps = 1e-5) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < eps);

test('pooling and normalisation come from the sentence-transformers files', () => {
  assert.deepEqual(e.pooling, { pooling: 'mean', normalize: true });
  assert.equal(e.maxTokens, 64);
});

test('embeddings are unit vectors, one per input, and differ by text', async () => {
  const { vectors, chunks } = await embedTexts(e, ['hello world', 'the capital of france', 'hello world']);
  assert.equal(vectors.length, 3);
  assert.deepEqual(chunks, [1, 1, 1]);
  for (const v of vectors) assert.ok(Math.abs(norm(v) - 1) < 1e-6);
  assert.ok(close(vectors[0], vectors[2]));
  assert.ok(!close(vectors[0], vectors[1]));
});

test('an over-long input is chunked: its vector is the normalised mean of its chunk vectors', async () => {
  // one letter = one WordPiece token; window = 64 - [CLS] - [SEP] = 62 tokens
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const words = Array.from({ length: 150 }, (_, i) => letters[(i * 7) % 26]);
  const parts = chunkTokenIds(words.map((_, i) => i), 62).map((p) => p.map((i) => words[i]).join(' '));
  assert.equal(parts.length, 3);
  const whole = await embedTexts(e, [words.join(' ')]);
  assert.deepEqual(whole.chunks, [3]);
  assert.equal(whole.tokens[0], 150 + 3 * 2);
  const each = await embedTexts(e, parts);
  assert.deepEqual(each.chunks, [1, 1, 1]);
  assert.ok(close(whole.vectors[0], meanPoolNormalize(each.vectors)));
  assert.ok(Math.abs(norm(whole.vectors[0]) - 1) < 1e-6);
  const cut = await embedTexts(e, [words.join(' ')], { truncate: true });
  assert.ok(close(cut.vectors[0], each.vectors[0]), 'truncate keeps only the first window');
});

test('the cross-encoder scores pairs, and order within a pair matters', async () => {
  const q = 'what is the capital of france';
  const s = await scorePairs(r, q, ['paris is the capital of france', 'the quick brown fox jumps', q]);
  assert.equal(s.length, 3);
  for (const x of s) assert.ok(x.score > 0 && x.score < 1 && Number.isFinite(x.logit));
  assert.notEqual(s[0].logit, s[1].logit);
  const swapped = await scorePairs(r, 'paris is the capital of france', [q]);
  assert.notEqual(swapped[0].logit, s[0].logit, 'a cross-encoder reads the pair jointly, not two embeddings');
});
