/** The decoder's logits and greedy tokens against torch (reference-outputs.json), KV cache included. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { greedyOnReferencePrompt, maxDiff, REF } from './reference.ts';

let m: LoadedModel;
before(async () => {
  m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu', dtype: 'fp32' });
});
after(() => m.dispose());

const idsTensor = (ids: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);

test('logits of the last prompt position equal torch', async () => {
  const ids = REF.generate.prompt_ids;
  const out = await (m.model as unknown as (i: object) => Promise<{ logits: { dims: number[]; data: Float32Array } }>)({
    input_ids: idsTensor(ids),
    attention_mask: idsTensor(ids.map(() => 1)),
  });
  const [, n, v] = out.logits.dims as [number, number, number];
  assert.equal(n, ids.length);
  assert.equal(v, REF.generate.last_logits.length);
  const last = Array.from(out.logits.data.subarray((n - 1) * v, n * v));
  const d = maxDiff(last, REF.generate.last_logits);
  assert.ok(d < 1e-3, `max |svc - torch| over ${v} logits = ${d}`);
});

test("greedy decoding through the KV cache gives torch's tokens", async () => {
  assert.deepEqual(await greedyOnReferencePrompt(m.model, m.tf.Tensor), REF.generate.greedy_ids);
});
