/** Embeddings and cross-encoder scores of the tiny fixture models against torch's (reference-outputs.json). */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { embedTexts } from '../../../src/services/inference/embed.ts';
import { scorePairs } from '../../../src/services/inference/rerank.ts';
import { TINY_EMBED, TINY_RERANKER } from './fixtures.ts';
import { maxDiff, REF } from './reference.ts';

// fp32 ONNX Runtime against fp32 torch: the same graph, a different kernel order.
const TOL = 1e-4;

let e: LoadedModel;
let r: LoadedModel;
before(async () => {
  e = await loadModel(TINY_EMBED, 'feature-extraction', { backend: 'cpu', dtype: 'fp32' });
  r = await loadModel(TINY_RERANKER, 'text-classification', { backend: 'cpu', dtype: 'fp32' });
});

test('pooling and normalisation come from the sentence-transformers files', () => {
  assert.deepEqual(e.pooling, { pooling: 'mean', normalize: true });
  assert.equal(e.maxTokens, 64);
});

test('the tokenizer gives the token ids of a WordPiece tokenizer written from the algorithm', () => {
  for (const { text, ids } of REF.embed.inputs) {
    const got = (e.tokenizer as unknown as (t: string) => { input_ids: { tolist(): bigint[][] } })(text).input_ids.tolist()[0]!.map(Number);
    assert.deepEqual(got, ids, text);
  }
});

test('embeddings equal torch mean pooling + L2 normalisation', async () => {
  const { vectors, chunks, tokens } = await embedTexts(e, REF.embed.inputs.map((x) => x.text));
  assert.deepEqual(chunks, REF.embed.inputs.map(() => 1));
  assert.deepEqual(tokens, REF.embed.inputs.map((x) => x.ids.length));
  REF.embed.inputs.forEach((want, i) => {
    const d = maxDiff(vectors[i]!, want.embedding);
    assert.ok(d < TOL, `${want.text}: max |svc - torch| = ${d}`);
  });
});

test('an over-long input is embedded window by window and averaged, as torch computes it', async () => {
  const { long } = REF.embed;
  const whole = await embedTexts(e, [long.text]);
  assert.deepEqual(whole.chunks, [long.windows]);
  assert.equal(whole.tokens[0], long.tokens);
  assert.ok(maxDiff(whole.vectors[0]!, long.embedding) < TOL, `max diff ${maxDiff(whole.vectors[0]!, long.embedding)}`);
  const cut = await embedTexts(e, [long.text], { truncate: true });
  assert.deepEqual(cut.chunks, [1]);
  assert.ok(maxDiff(cut.vectors[0]!, long.first_window) < TOL, 'truncate keeps only the first window');
});

test('the cross-encoder logits equal torch on the jointly read pair (token types 0/1)', async () => {
  for (const p of REF.rerank.pairs) {
    const [s] = await scorePairs(r, p.query, [p.passage]);
    assert.ok(Math.abs(s!.logit - p.logit) < TOL, `${p.query} / ${p.passage}: svc ${s!.logit}, torch ${p.logit}`);
    assert.ok(Math.abs(s!.score - 1 / (1 + Math.exp(-p.logit))) < TOL, 'score is the sigmoid of the logit');
  }
});
