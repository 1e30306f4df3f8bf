/** Continuous batching on onnxruntime-web (WASM): concurrent greedy streams equal each one alone. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { type GenerateOptions, generateText, type GenerationInput } from '../../../src/services/inference/generate.ts';
import { batchDecoderFor } from '../../../src/services/inference/batch-decoder.ts';
import { TINY_LLAMA } from './fixtures.ts';

let m: LoadedModel;
before(async () => {
  m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'wasm', dtype: 'fp32' });
});
after(() => m.dispose());

async function text(input: GenerationInput, o: GenerateOptions) {
  const g = generateText(m, input, o);
  let t = '';
  for await (const d of g) t += d;
  await g.result;
  return t;
}

test('WASM: 3 concurrent greedy streams give the texts they give alone', async () => {
  assert.equal(m.device, 'wasm');
  assert.ok(batchDecoderFor(m), 'batch path available on WASM');
  const prompts: GenerationInput[] = [{ prompt: 'a b' }, {
    messages: [{ role: 'user', content: 'Tell me about Paris.' }],
    enableThinking: false,
  }, { prompt: 'The quick brown fox jumps' }];
  const o = { temperature: 0, maxTokens: 16 };
  const alone: string[] = [];
  for (const p of prompts) alone.push(await text(p, { ...o, batching: false }));
  const together = await Promise.all(prompts.map((p) => text(p, o)));
  assert.deepEqual(together, alone);
});
