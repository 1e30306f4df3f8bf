/**
 * The Anthropic Messages gateway, judged by the official `@anthropic-ai/sdk` against a listening server
 * (tiny random fixture models through the hub stand-in; a logits processor makes the random model say a
 * given text where the test needs known output): a message, the stream's event order, thinking, tool use
 * forced with tool_choice any and a tool_result round trip, count_tokens, models in Anthropic's shape
 * (and the OpenAI shape without the header), the error envelope, refused fields, x-api-key.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { Ajv } from 'ajv';
import { failAfter, type Harness, startHarness, tinyLlamaIds } from '../ollama/harness.ts';
import { LONG_LLAMA } from '../../support/hub-stand-in.ts';

let h: Harness;
let client: Anthropic;
const MODEL = 'tiny-llama:test';
const ajv = new Ajv({ strict: false });
const user = (content: string) => [{ role: 'user' as const, content }];
/** Sampling fields older clients send (no longer in the SDK's request types; the server still takes them). */
const sampling = (o: { temperature?: number; top_p?: number; top_k?: number }) => o as Record<string, never>;

before(async () => {
  h = await startHarness();
  client = new Anthropic({ baseURL: h.srv.url, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  h.steer(undefined);
  await h?.close();
});

describe('messages', () => {
  it('a message: text block, end_turn, usage', async () => {
    const r = await h.steered(
      'Hello there, friend',
      () => client.messages.create({ model: MODEL, max_tokens: 30, messages: user('hi'), system: 'Be brief.' }),
    );
    assert.equal(r.type, 'message');
    assert.equal(r.role, 'assistant');
    assert.match(r.id, /^msg_/);
    assert.equal(r.model, MODEL);
    assert.deepEqual(r.content, [{ type: 'text', text: 'Hello there, friend' }]);
    assert.equal(r.stop_reason, 'end_turn');
    assert.equal(r.stop_sequence, null);
    assert.ok(r.usage.input_tokens > 0);
    assert.equal(r.usage.output_tokens, (await tinyLlamaIds('Hello there, friend')).length + 1);
  });

  it('max_tokens and stop_sequences give their stop reasons', async () => {
    const cut = await client.messages.create({
      model: MODEL,
      max_tokens: 3,
      messages: user('talk'),
      ...sampling({ temperature: 1, top_k: 50 }),
    });
    assert.equal(cut.stop_reason, 'max_tokens');
    assert.equal(cut.usage.output_tokens, 3);
    const stopped = await h.steered(
      'one two three four',
      () => client.messages.create({ model: MODEL, max_tokens: 30, messages: user('count'), stop_sequences: ['three'] }),
    );
    assert.equal(stopped.stop_reason, 'stop_sequence');
    assert.equal(stopped.stop_sequence, 'three');
    assert.deepEqual(stopped.content, [{ type: 'text', text: 'one two ' }]);
  });

  it('a stream: the exact event order, same text as the whole message, usage in message_delta', async () => {
    const params = { model: MODEL, max_tokens: 12, messages: user('stream please'), temperature: 0 };
    const whole = await client.messages.create(params);
    const events = [];
    for await (const e of await client.messages.create({ ...params, stream: true })) events.push(e);
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'message_start');
    assert.equal(types[1], 'content_block_start');
    assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
    assert.ok(types.slice(2, -3).every((t) => t === 'content_block_delta') && types.length > 5, types.join(','));
    const start = events[0] as Anthropic.RawMessageStartEvent;
    assert.equal(start.message.usage.input_tokens, whole.usage.input_tokens);
    const text = events.flatMap((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? [e.delta.text] : [])).join('');
    assert.deepEqual([{ type: 'text', text }], whole.content);
    const delta = events.at(-2) as Anthropic.RawMessageDeltaEvent;
    assert.equal(delta.delta.stop_reason, whole.stop_reason);
    assert.equal(delta.usage.output_tokens, whole.usage.output_tokens);
    // on the wire: every data line is announced by an `event:` line of its own type
    const res = await fetch(`${h.srv.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ ...params, stream: true }),
    });
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    for (const f of frames) {
      const m = /^event: (\w+)\ndata: (.*)$/s.exec(f);
      assert.ok(m, f);
      assert.equal(JSON.parse(m[2]).type, m[1]);
    }
  });

  it('thinking: a thinking block then a text block, whole and streamed (thinking_delta, text_delta)', async () => {
    const said = '<think>\nThe user greets me.\n</think>\n\nHello there';
    const params = { model: MODEL, max_tokens: 60, messages: user('hi'), thinking: { type: 'enabled' as const, budget_tokens: 40 } };
    const r = await h.steered(said, () => client.messages.create(params));
    assert.deepEqual(r.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal((r.content[0] as Anthropic.ThinkingBlock).thinking, 'The user greets me.');
    assert.equal((r.content[1] as Anthropic.TextBlock).text, 'Hello there');
    const events = await h.steered(said, async () => {
      const out = [];
      for await (const e of await client.messages.create({ ...params, stream: true })) out.push(e);
      return out;
    });
    const starts = events.filter((e) => e.type === 'content_block_start') as Anthropic.RawContentBlockStartEvent[];
    assert.deepEqual(starts.map((e) => [e.index, e.content_block.type]), [[0, 'thinking'], [1, 'text']]);
    const deltas = events.filter((e) => e.type === 'content_block_delta') as Anthropic.RawContentBlockDeltaEvent[];
    assert.equal(
      deltas.filter((d) => d.index === 0).map((d) => (d.delta as Anthropic.ThinkingDelta).thinking).join(''),
      'The user greets me.',
    );
    assert.equal(deltas.filter((d) => d.index === 1).map((d) => (d.delta as Anthropic.TextDelta).text).join(''), 'Hello there');
    // the stop of block 0 comes before the start of block 1
    const order = events.map((e) => `${e.type}${'index' in e ? e.index : ''}`);
    assert.ok(order.indexOf('content_block_stop0') < order.indexOf('content_block_start1'));
  });

  it('thinking display omitted: the block is kept without its text', async () => {
    const r = await h.steered(
      '<think>\nsecret plan\n</think>\n\nDone',
      () =>
        client.messages.create({
          model: MODEL,
          max_tokens: 40,
          messages: user('hi'),
          thinking: { type: 'enabled', budget_tokens: 20, display: 'omitted' },
        }),
    );
    assert.deepEqual(r.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal((r.content[0] as Anthropic.ThinkingBlock).thinking, '');
  });

  it("output_config.format json_schema: the random model's output parses and validates", async () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 12 },
        age: { type: 'integer' },
        tags: { type: 'array', items: { enum: ['a', 'b'] }, maxItems: 2 },
      },
      required: ['name', 'age', 'tags'],
      additionalProperties: false,
    };
    const validate = ajv.compile(schema);
    for (let i = 0; i < 3; i++) {
      const r = await client.messages.create({
        model: MODEL,
        max_tokens: 80,
        messages: user('a person'),
        output_config: { format: { type: 'json_schema', schema } },
        ...sampling({ temperature: 1 }),
      });
      const text = (r.content[0] as Anthropic.TextBlock).text;
      assert.ok(validate(JSON.parse(text)), `${text} ${JSON.stringify(validate.errors)}`);
      assert.equal(r.stop_reason, 'end_turn');
    }
  });

  it('the SDK stream helper accumulates the final message', async () => {
    const msg = await h.steered(
      'Streaming works',
      () => client.messages.stream({ model: MODEL, max_tokens: 20, messages: user('x') }).finalMessage(),
    );
    assert.deepEqual(msg.content, [{ type: 'text', text: 'Streaming works' }]);
    assert.equal(msg.stop_reason, 'end_turn');
  });
});

const WEATHER: Anthropic.Tool = {
  name: 'weather',
  description: 'Weather',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['c', 'f'] }, days: { type: 'integer', minimum: 1 } },
    required: ['city', 'unit', 'days'],
    additionalProperties: false,
  },
};
const ADD: Anthropic.Tool = {
  name: 'add',
  input_schema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
};

describe('tools', () => {
  it('tool_choice any on the random model: a tool_use whose input validates; the tool_result round trip', async () => {
    const validate = ajv.compile(WEATHER.input_schema);
    // The template's tools block, the call and its result do not always fit tiny-llama's 512 positions: the
    // same weights declaring a longer context.
    const MODEL = LONG_LLAMA.name;
    for (let i = 0; i < 2; i++) {
      const r = await client.messages.create({
        model: MODEL,
        max_tokens: 200,
        messages: user('weather in Paris?'),
        tools: [WEATHER],
        tool_choice: { type: 'any' },
        ...sampling({ temperature: 1 }),
      });
      assert.equal(r.stop_reason, 'tool_use');
      const use = r.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      assert.ok(use, JSON.stringify(r.content));
      assert.match(use.id, /^toolu_/);
      assert.equal(use.name, 'weather');
      assert.ok(validate(use.input), JSON.stringify(validate.errors));
      const next = await client.messages.create({
        model: MODEL,
        max_tokens: 4,
        tools: [WEATHER],
        messages: [...user('weather in Paris?'), { role: 'assistant', content: r.content }, {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21 degrees' }],
        }],
      });
      assert.equal(next.type, 'message');
      assert.ok(next.usage.input_tokens > r.usage.input_tokens, 'the call and its result are in the prompt');
    }
  });

  it('tool_choice tool, streamed: one tool_use block with an input_json_delta; the SDK parses the input', async () => {
    const events = [];
    for await (
      const e of await client.messages.create({
        model: MODEL,
        max_tokens: 200,
        messages: user('add'),
        tools: [ADD],
        tool_choice: { type: 'tool', name: 'add' },
        stream: true,
        ...sampling({ temperature: 0 }),
      })
    ) events.push(e);
    const start = events.find((e) => e.type === 'content_block_start') as Anthropic.RawContentBlockStartEvent;
    assert.equal(start.content_block.type, 'tool_use');
    assert.equal((start.content_block as Anthropic.ToolUseBlock).name, 'add');
    const d = events.find((e) => e.type === 'content_block_delta') as Anthropic.RawContentBlockDeltaEvent;
    assert.equal(d.delta.type, 'input_json_delta');
    const input = JSON.parse((d.delta as Anthropic.InputJSONDelta).partial_json);
    assert.equal(typeof input.a, 'number');
    assert.equal((events.at(-2) as Anthropic.RawMessageDeltaEvent).delta.stop_reason, 'tool_use');
    const msg = await client.messages.stream({
      model: MODEL,
      max_tokens: 200,
      messages: user('add'),
      tools: [ADD],
      tool_choice: { type: 'tool', name: 'add' },
    }).finalMessage();
    assert.equal(typeof ((msg.content[0] as Anthropic.ToolUseBlock).input as { a: unknown }).a, 'number');
  });

  it('tool_choice auto: a call in the model output becomes a tool_use block', async () => {
    const r = await h.steered(
      '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
      () => client.messages.create({ model: MODEL, max_tokens: 60, messages: user('1+2?'), tools: [ADD] }),
    );
    assert.equal(r.stop_reason, 'tool_use');
    const use = r.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    assert.deepEqual([use.name, use.input], ['add', { a: 1, b: 2 }]);
  });
});

describe('tools, auto, streamed', () => {
  it('a call the model makes on its own: one tool_use block, its input in several input_json_delta fragments', async () => {
    const events: Anthropic.RawMessageStreamEvent[] = [];
    const msg = await h.steered('<tool_call>\n{"name": "add", "arguments": {"a": 1.5, "b": 20}}\n</tool_call>', async () => {
      const stream = client.messages.stream({ model: MODEL, max_tokens: 120, messages: user('1.5+20?'), tools: [ADD] });
      stream.on('streamEvent', (e) => events.push(e));
      return await stream.finalMessage();
    });
    const starts = events.filter((e) => e.type === 'content_block_start') as Anthropic.RawContentBlockStartEvent[];
    assert.equal(starts.length, 1);
    assert.equal(starts[0].content_block.type, 'tool_use');
    const parts = events
      .filter((e) => e.type === 'content_block_delta' && e.delta.type === 'input_json_delta')
      .map((e) => ((e as Anthropic.RawContentBlockDeltaEvent).delta as Anthropic.InputJSONDelta).partial_json);
    assert.ok(parts.length > 2, JSON.stringify(parts));
    assert.deepEqual(JSON.parse(parts.join('')), { a: 1.5, b: 20 });
    assert.equal(msg.stop_reason, 'tool_use');
    const use = msg.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    assert.deepEqual([use.name, use.input], ['add', { a: 1.5, b: 20 }]);
  });
});

describe('count_tokens', () => {
  it('equals the input_tokens a generation reports for the same request; tools add tokens', async () => {
    const req = { model: MODEL, system: 'You are terse.', messages: user('how many tokens is this?') };
    const counted = await client.messages.countTokens(req);
    const r = await client.messages.create({ ...req, max_tokens: 1 });
    assert.equal(counted.input_tokens, r.usage.input_tokens);
    const withTools = await client.messages.countTokens({ ...req, tools: [ADD] });
    assert.ok(withTools.input_tokens > counted.input_tokens);
  });
});

describe('models', () => {
  it('Anthropic shape with anthropic-version (chat models only); the OpenAI shape without it', async () => {
    const ids = [];
    for await (const m of client.models.list()) {
      assert.equal(m.type, 'model');
      assert.match(m.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      ids.push(m.id);
    }
    assert.ok(ids.includes(MODEL));
    assert.ok(!ids.includes('tiny-bert-embed:test'));
    const one = await client.models.retrieve(MODEL);
    assert.equal(one.id, MODEL);
    assert.equal(one.capabilities?.thinking.supported, true);
    const openai = await (await fetch(`${h.srv.url}/v1/models`)).json();
    assert.equal(openai.object, 'list');
    assert.ok(openai.data.some((m: { id: string; object: string }) => m.id === 'tiny-bert-embed:test' && m.object === 'model'));
    await assert.rejects(
      client.models.retrieve('nope:1'),
      (e: unknown) => e instanceof Anthropic.NotFoundError && (e.error as { error: { type: string } }).error.type === 'not_found_error',
    );
  });
});

describe('errors', () => {
  const envelope = async (res: Response, status: number, type: string) => {
    assert.equal(res.status, status);
    const body = await res.json();
    assert.deepEqual(Object.keys(body).sort(), ['error', 'type']);
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, type);
    assert.equal(typeof body.error.message, 'string');
    return body.error.message as string;
  };

  it('unknown model: 404 not_found_error through the SDK and on the wire', async () => {
    await assert.rejects(
      client.messages.create({ model: 'no-such-model', max_tokens: 5, messages: user('x') }),
      (e: unknown) => e instanceof Anthropic.NotFoundError,
    );
    await envelope(await h.post('/v1/messages', { model: 'no-such-model', max_tokens: 5, messages: user('x') }), 404, 'not_found_error');
  });

  it('validation: missing max_tokens, bad role, malformed JSON are invalid_request_error', async () => {
    assert.match(
      await envelope(await h.post('/v1/messages', { model: MODEL, messages: user('x') }), 400, 'invalid_request_error'),
      /^max_tokens: required/,
    );
    assert.match(
      await envelope(
        await h.post('/v1/messages', { model: MODEL, max_tokens: 5, messages: [{ role: 'system', content: 'x' }] }),
        400,
        'invalid_request_error',
      ),
      /messages\.0\.role/,
    );
    await envelope(
      await fetch(`${h.srv.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":' }),
      400,
      'invalid_request_error',
    );
    await assert.rejects(
      client.messages.create({ model: MODEL, max_tokens: 5, messages: user('x'), ...sampling({ temperature: 1.5 }) }),
      (e: unknown) => e instanceof Anthropic.BadRequestError && /temperature/.test(e.message),
    );
  });

  for (
    const [field, value] of [['mcp_servers', [{ type: 'url', url: 'http://x', name: 'x' }]], ['container', 'c1'], ['context_management', {
      edits: [{ type: 'clear_tool_uses_20250919' }],
    }], ['frobnicate', 1]] as const
  ) {
    it(`refuses ${field} by name`, async () => {
      const msg = await envelope(
        await h.post('/v1/messages', { model: MODEL, max_tokens: 5, messages: user('x'), [field]: value }),
        400,
        'invalid_request_error',
      );
      assert.match(msg, new RegExp(`^${field}:`));
    });
  }

  it('context_management without edits changes nothing and is accepted', async () => {
    const res = await h.post('/v1/messages/count_tokens', { model: MODEL, messages: user('x'), context_management: { edits: [] } });
    assert.equal(res.status, 200);
  });

  it('refuses server tools, document blocks and prefill by name', async () => {
    assert.match(
      await envelope(
        await h.post('/v1/messages', {
          model: MODEL,
          max_tokens: 5,
          messages: user('x'),
          tools: [{ type: 'web_search_20250305', name: 'web_search' }],
        }),
        400,
        'invalid_request_error',
      ),
      /web_search_20250305/,
    );
    assert.match(
      await envelope(
        await h.post('/v1/messages', {
          model: MODEL,
          max_tokens: 5,
          messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }] }],
        }),
        400,
        'invalid_request_error',
      ),
      /"document" blocks/,
    );
    assert.match(
      await envelope(
        await h.post('/v1/messages', {
          model: MODEL,
          max_tokens: 5,
          messages: [...user('x'), { role: 'assistant', content: 'The answer is' }],
        }),
        400,
        'invalid_request_error',
      ),
      /prefill/,
    );
  });

  it('an image block to a model without vision is a 400 naming vision', async () => {
    await assert.rejects(
      client.messages.create({
        model: MODEL,
        max_tokens: 5,
        messages: [{
          role: 'user',
          content: [{ type: 'text', text: 'what?' }, {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' },
          }],
        }],
      }),
      (e: unknown) =>
        e instanceof Anthropic.BadRequestError && /vision/.test(e.message) &&
        (e.error as { error: { type: string } }).error.type === 'invalid_request_error',
    );
  });

  it('a tool_result naming no earlier tool_use is refused', async () => {
    await assert.rejects(
      client.messages.create({
        model: MODEL,
        max_tokens: 5,
        tools: [ADD],
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nope', content: '3' }] }],
      }),
      (e: unknown) => e instanceof Anthropic.BadRequestError && /toolu_nope/.test(e.message),
    );
  });

  it('a failure after streaming began arrives as an error event the SDK raises', async () => {
    const boom = failAfter(3);
    h.steer(() => [boom]);
    try {
      const got: unknown[] = [];
      await assert.rejects(async () => {
        for await (const e of await client.messages.create({ model: MODEL, max_tokens: 20, messages: user('x'), stream: true })) {
          got.push(e);
        }
      }, (e: unknown) => e instanceof Anthropic.APIError && /Internal server error/.test(e.message));
      assert.ok(got.length >= 1, 'events came before the error');
    } finally {
      h.steer(undefined);
    }
  });

  // last: creating a key makes keys required on this server
  it('x-api-key is a key: a wrong one is a 401 authentication_error, the right one works', async () => {
    const key = await h.srv.keys.create({ name: 'desk' });
    await assert.rejects(
      client.messages.countTokens({ model: MODEL, messages: user('x') }),
      (e: unknown) =>
        e instanceof Anthropic.AuthenticationError && (e.error as { error: { type: string } }).error.type === 'authentication_error',
    );
    const keyed = new Anthropic({ baseURL: h.srv.url, apiKey: key.token, maxRetries: 0 });
    assert.ok((await keyed.messages.countTokens({ model: MODEL, messages: user('x') })).input_tokens > 0);
    assert.ok((await keyed.models.list()).data.length > 0);
  });
});
