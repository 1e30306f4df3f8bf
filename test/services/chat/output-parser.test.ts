/**
 * The output parser: thinking and tool calls split out of a model's text, whatever the token boundaries;
 * a template-rendered assistant turn with tool calls parses back to the same calls.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  createOutputParser,
  type OutputDelta,
  type OutputParserOptions,
  templateMessages,
  toolFormatOf,
} from '../../../src/services/chat/index.ts';
import { renderChatPrompt } from '../../../src/services/inference/chat-prompt.ts';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { ownChatTemplate } from '../../../src/services/models/show.ts';
import { TINY_LLAMA } from '../inference/fixtures.ts';

/** Feeds `text` in pieces of `size` characters; returns the deltas and their sum. */
function feed(text: string, o: OutputParserOptions, size: number) {
  const p = createOutputParser(o);
  const deltas: OutputDelta[] = [];
  for (let i = 0; i < text.length; i += size) deltas.push(p.push(text.slice(i, i + size)));
  deltas.push(p.flush());
  const sum = { content: '', thinking: '', toolCalls: [] as OutputDelta['toolCalls'] };
  for (const d of deltas) (sum.content += d.content), (sum.thinking += d.thinking), sum.toolCalls.push(...d.toolCalls);
  return { deltas, sum };
}

const SIZES = [1, 2, 3, 5, 7, 1000];

describe('thinking', () => {
  it('splits <think> blocks from the answer at every chunking, trimming the block whitespace', () => {
    const text = '<think>\nThe user greets me.\nI greet back.\n</think>\n\nHello there!';
    for (const size of SIZES) {
      const { sum } = feed(text, { thinking: true }, size);
      assert.deepEqual(sum, { content: 'Hello there!', thinking: 'The user greets me.\nI greet back.', toolCalls: [] }, `size ${size}`);
    }
  });

  it('starts as thinking when the template opened the block in the prompt', () => {
    for (const size of SIZES) {
      const { sum } = feed('pondering...\n</think>\n\nAnswer.', { thinking: true, startInThinking: true }, size);
      assert.deepEqual(sum, { content: 'Answer.', thinking: 'pondering...', toolCalls: [] });
    }
  });

  it('an unclosed block is all thinking; without thinking parsing the tags stay content', () => {
    assert.deepEqual(feed('<think>still going', { thinking: true }, 3).sum, { content: '', thinking: 'still going', toolCalls: [] });
    assert.equal(feed('<think>x</think>y', { thinking: false }, 2).sum.content, '<think>x</think>y');
  });

  it('streams: thinking arrives before the block closes, and a partial tag is never shown', () => {
    const { deltas } = feed('<think>abc def</think>ok', { thinking: true }, 4);
    assert.ok(deltas.some((d, i) => d.thinking && deltas.slice(i + 1).some((x) => x.content)), 'thinking streamed before content');
    for (const d of deltas) assert.doesNotMatch(d.content + d.thinking, /<|>/);
  });
});

describe('tool calls', () => {
  const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>';

  it('hermes: calls parsed from <tool_call> blocks, content kept, at every chunking', () => {
    const text = `Let me check.\n${call}\n${call.replace('Paris', 'Rome')}`;
    for (const size of SIZES) {
      const { sum, deltas } = feed(text, { thinking: true, tools: 'hermes' }, size);
      assert.equal(sum.content, 'Let me check.', `size ${size}`);
      assert.deepEqual(sum.toolCalls, [
        { name: 'get_weather', arguments: { city: 'Paris', days: 2 } },
        { name: 'get_weather', arguments: { city: 'Rome', days: 2 } },
      ]);
      for (const d of deltas) assert.doesNotMatch(d.content, /tool_call|\{/);
    }
  });

  it('a block that is not a valid call is given back as content', () => {
    const { sum } = feed('<tool_call>not json</tool_call>', { thinking: false, tools: 'hermes' }, 3);
    assert.deepEqual(sum.toolCalls, []);
    assert.equal(sum.content, '<tool_call>not json</tool_call>');
  });

  it('an unclosed block holding a valid call (cut by a stop) still counts', () => {
    const { sum } = feed('<tool_call>{"name":"f","arguments":"{\\"a\\":1}"}', { thinking: false, tools: 'hermes' }, 4);
    assert.deepEqual(sum.toolCalls, [{ name: 'f', arguments: { a: 1 } }]);
  });

  it('without tools in the request nothing is parsed as a call', () => {
    assert.equal(feed(call, { thinking: true }, 5).sum.content, call);
  });

  it('mistral and llama conventions', () => {
    const m =
      feed('[TOOL_CALLS][{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": {}}]', { thinking: false, tools: 'mistral' }, 3)
        .sum;
    assert.deepEqual(m.toolCalls, [{ name: 'f', arguments: { x: 1 } }, { name: 'g', arguments: {} }]);
    const l = feed(' {"name": "f", "parameters": {"x": "y"}}', { thinking: false, tools: 'json' }, 2).sum;
    assert.deepEqual(l, { content: '', thinking: '', toolCalls: [{ name: 'f', arguments: { x: 'y' } }] });
    const plain = feed('{not a call} but text', { thinking: false, tools: 'json' }, 2).sum;
    assert.equal(plain.content, '{not a call} but text');
    assert.equal(toolFormatOf('{{ "<tool_call>" }}'), 'hermes');
    assert.equal(toolFormatOf('[TOOL_CALLS]'), 'mistral');
    assert.equal(toolFormatOf('<|python_tag|>'), 'json');
  });

  it('thinking then a call', () => {
    const { sum } = feed(`<think>I need the weather.</think>\n\n${call}`, { thinking: true, tools: 'hermes' }, 3);
    assert.deepEqual(sum, {
      content: '',
      thinking: 'I need the weather.',
      toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 2 } }],
    });
  });
});

describe('round trip through the model template', () => {
  let m: LoadedModel;
  before(async () => {
    m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu' });
  });

  it('an assistant turn rendered by the tiny model template parses back to the same thinking and calls', async () => {
    const template = await ownChatTemplate(TINY_LLAMA);
    const calls = [
      { function: { name: 'get_weather', arguments: { city: 'Paris' } } },
      { function: { name: 'get_time', arguments: '{"zone": "CET"}' } },
    ];
    const messages = templateMessages([
      { role: 'user', content: 'Weather and time in Paris?' },
      { role: 'assistant', content: '', thinking: 'Two tools are needed.', tool_calls: calls },
    ]);
    const prompt = renderChatPrompt(m.tokenizer, {
      messages,
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
      addGenerationPrompt: false,
    });
    const turn = prompt.slice(
      prompt.lastIndexOf('<|im_start|>assistant\n') + '<|im_start|>assistant\n'.length,
      prompt.lastIndexOf('<|im_end|>'),
    );
    assert.match(turn, /<tool_call>/);
    for (const size of SIZES) {
      const { sum } = feed(turn, { thinking: true, tools: toolFormatOf(template) }, size);
      assert.deepEqual(sum, {
        content: '',
        thinking: 'Two tools are needed.',
        toolCalls: [
          { name: 'get_weather', arguments: { city: 'Paris' } },
          { name: 'get_time', arguments: { zone: 'CET' } },
        ],
      });
    }
  });
});
