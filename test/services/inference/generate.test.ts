import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { type GenerateOptions, generateText, type GenerationInput } from '../../../src/services/inference/generate.ts';
import { renderChatPrompt } from '../../../src/services/inference/chat-prompt.ts';
import { createStopMatcher } from '../../../src/services/inference/stop-strings.ts';
import { TINY_LLAMA } from './fixtures.ts';

let m: LoadedModel;
before(async () => {
  m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu' });
});

const chat: GenerationInput = { messages: [{ role: 'user', content: 'Tell me about Paris.' }], enableThinking: false };

async function collect(input: GenerationInput, o: GenerateOptions) {
  const g = generateText(m, input, o);
  const deltas: string[] = [];
  for await (const d of g) deltas.push(d);
  return { deltas, text: deltas.join(''), result: await g.result };
}

test('loads on the native CPU backend and reports it', () => {
  assert.equal(m.device, 'cpu');
  assert.equal(m.ort, 'onnxruntime-node');
  assert.ok(m.sizeBytes > 100_000 && m.sizeBytes < 1_000_000);
});

test('streams token by token and reports stats', async () => {
  const { deltas, text, result } = await collect(chat, { temperature: 0, maxTokens: 24 });
  assert.ok(deltas.length > 5, `expected many deltas, got ${deltas.length}`);
  assert.equal(result.text, text);
  assert.equal(result.finishReason, 'length');
  assert.equal(result.completionTokens, 24);
  assert.ok(result.promptTokens > 5);
  assert.ok(result.timings.promptEvalNs > 0 && result.timings.evalNs > 0);
});

test('stops exactly before a stop sequence', async () => {
  const full = (await collect(chat, { temperature: 0, maxTokens: 40 })).text;
  const stop = full.slice(12, 15); // a string the greedy output is known to contain
  const cut = full.slice(0, full.indexOf(stop));
  const { text, result } = await collect(chat, { temperature: 0, maxTokens: 40, stop: [stop, 'never-appears'] });
  assert.equal(text, cut);
  assert.equal(result.finishReason, 'stop');
  assert.ok(result.completionTokens < 40);
});

test('same seed gives the same text; another seed another text', async () => {
  const o = { temperature: 1, topP: 0.95, topK: 50, maxTokens: 30 };
  const a = (await collect(chat, { ...o, seed: 11 })).text;
  const b = (await collect(chat, { ...o, seed: 11 })).text;
  const c = (await collect(chat, { ...o, seed: 12 })).text;
  assert.equal(a, b);
  assert.notEqual(a, c);
});

test('penalties change the output', async () => {
  const plain = (await collect(chat, { temperature: 0, maxTokens: 30 })).text;
  const pen =
    (await collect(chat, { temperature: 0, maxTokens: 30, frequencyPenalty: 2, presencePenalty: 1, repetitionPenalty: 1.5 })).text;
  assert.notEqual(plain, pen);
});

test('an abort signal ends the stream at once', async () => {
  const ac = new AbortController();
  const g = generateText(m, chat, { temperature: 0, maxTokens: 400, signal: ac.signal });
  let n = 0;
  await assert.rejects(
    (async () => {
      for await (const _ of g) if (++n === 3) ac.abort();
    })(),
    { name: 'AbortError' },
  );
  assert.equal(n, 3);
  await assert.rejects(g.result, { name: 'AbortError' });
});

test('extra logits processors plug in (a constraint forcing one token)', async () => {
  const id = m.tokenizer.encode('x', { add_special_tokens: false } as never)[0];
  const force = (_ids: bigint[][], logits: { data: Float32Array }) => {
    logits.data.fill(-Infinity);
    logits.data[id] = 0;
    return logits;
  };
  const { text } = await collect(chat, { temperature: 1, seed: 3, maxTokens: 5, logitsProcessors: [force] });
  assert.equal(text, 'xxxxx');
});

test('the chat template renders tools and the thinking switch', () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];
  const withTools = renderChatPrompt(m.tokenizer, { messages: [{ role: 'user', content: 'hi' }], tools });
  assert.match(withTools, /<tools>\n\{"type": "function", "function": \{"name": "get_weather"/);
  assert.match(withTools, /<tool_call>/);
  assert.ok(withTools.endsWith('<|im_start|>assistant\n'));
  const noThink = renderChatPrompt(m.tokenizer, { messages: [{ role: 'user', content: 'hi' }], enableThinking: false });
  assert.ok(noThink.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'));
  const calls = renderChatPrompt(m.tokenizer, {
    messages: [
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } }],
      },
      { role: 'tool', content: '{"temp": 20}' },
    ],
  });
  assert.match(calls, /<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "Paris"\}\}\n<\/tool_call>/);
  assert.match(calls, /<tool_response>\n\{"temp": 20\}\n<\/tool_response>/);
});

test('byte-level vocabulary encodes arbitrary text losslessly', () => {
  const s = '{"ключ": "値", "emoji": "🦊", "ctl": "\\u0001"}';
  const ids = m.tokenizer.encode(s, { add_special_tokens: false } as never);
  assert.equal(m.tokenizer.decode(ids), s);
});

test('stop matcher holds back a partial stop across chunks', () => {
  const s = createStopMatcher(['END']);
  assert.deepEqual(s.push('abcE'), { emit: 'abc', stopped: false });
  assert.deepEqual(s.push('N'), { emit: '', stopped: false });
  assert.deepEqual(s.push('Dzz'), { emit: '', stopped: true });
  assert.equal(s.text, 'abc');
  const t = createStopMatcher(['END']);
  t.push('abE');
  assert.deepEqual(t.push('x'), { emit: 'Ex', stopped: false });
});
