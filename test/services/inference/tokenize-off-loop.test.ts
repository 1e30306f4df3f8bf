/**
 * Large inputs are tokenized in the worker pool: the ids must be exactly those the model's own tokenizer
 * gives on the loop, for raw prompts (special tokens added), chat prompts and embedding inputs, and the
 * generation fed those ids must be the same greedy text.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { generateText, renderPrompt } from '../../../src/services/inference/generate.ts';
import { OFF_LOOP_CHARS, tokenizeOffLoop } from '../../../src/services/inference/tokenize-off-loop.ts';
import { closeWorkers, workers } from '../../../src/services/workers/index.ts';
import { FIXTURE_MODELS_DIR } from '../../support/hub-stand-in.ts';

// Mixed scripts, digits, whitespace runs and emoji: the cases where tokenizers differ if anything does.
const unit = 'The quick brown fox — 42 times!  Ünïcödé, 中文字符, emoji 🦊🚀, tabs\tand\nnew lines. ';
const big = unit.repeat(Math.ceil((OFF_LOOP_CHARS * 1.5) / unit.length));
const ids = (m: LoadedModel, text: string, special: boolean) =>
  (m.tokenizer as unknown as (t: string, o: object) => { input_ids: { tolist(): bigint[][] } })(text, { add_special_tokens: special })
    .input_ids.tolist()[0]!.map(Number);

describe('tokenization off the event loop', () => {
  let llama: LoadedModel;
  let bert: LoadedModel;
  before(async () => {
    llama = await loadModel(`${FIXTURE_MODELS_DIR}/tiny-llama`, 'text-generation', { backend: 'cpu' });
    bert = await loadModel(`${FIXTURE_MODELS_DIR}/tiny-bert-embed`, 'feature-extraction', { backend: 'cpu' });
  });
  after(async () => {
    await llama?.dispose();
    await bert?.dispose();
    await closeWorkers();
  });

  it('small inputs stay on the loop', async () => {
    assert.equal(await tokenizeOffLoop(llama, ['hello'], true), null);
  });

  it('the worker gives the same ids as the loaded tokenizer', async () => {
    const before = workers.stats()?.started ?? 0;
    for (const [m, special] of [[llama, true], [llama, false], [bert, false]] as const) {
      const [got] = (await tokenizeOffLoop(m, [big], special))!;
      assert.deepEqual(got, ids(m, big, special));
    }
    assert.ok((workers.stats()?.started ?? 0) > before || before > 0, 'ran in the pool');
  });

  it("a generation fed the worker's ids gives the same greedy text", async () => {
    // a prompt that fits the tiny model's 512-token window, tokenized in the pool directly
    const input = { messages: [{ role: 'user' as const, content: unit.repeat(4) }] };
    const rendered = renderPrompt(llama, input);
    const [pre] = await workers.run('text.tokenize', [llama.dir, [rendered.prompt], rendered.addSpecialTokens]);
    const a = generateText(llama, input, { maxTokens: 6, temperature: 0 });
    const ra = await a.result;
    const b = generateText(llama, input, { maxTokens: 6, temperature: 0 }, 0, { ...rendered, ids: Array.from(pre!) });
    const rb = await b.result;
    assert.equal(rb.promptTokens, ra.promptTokens);
    assert.equal(rb.text, ra.text);
  });
});
