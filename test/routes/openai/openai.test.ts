/**
 * Dialect A, judged by the official `openai` client against a listening server (tiny random fixture
 * models through the hub stand-in): chat (plain, streamed, include_usage), tool calls (forced by
 * constrained decoding, parsed from output, fed back), structured output validated by ajv, completions,
 * embeddings (float, base64, dimensions, 202 job), models, the error envelope, refused and extension
 * fields, in-stream errors and cancellation on disconnect.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { failAfter, type Harness, startHarness } from '../ollama/harness.ts';

let h: Harness;
let openai: OpenAI;
const MODEL = 'tiny-llama:test';
const ajv = new Ajv({ strict: false });

before(async () => {
  h = await startHarness();
  openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  h.steer(undefined);
  await h?.close();
});

const user = (content: string) => [{ role: 'user' as const, content }];

describe('chat completions', () => {
  it('plain: content, usage, finish_reason', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages: user('hello'), max_tokens: 8, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.model, MODEL);
    assert.equal(r.choices.length, 1);
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage && r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 8);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  it('streamed with include_usage: same text as the non-streamed greedy answer, usage chunk last', async () => {
    const params = { model: MODEL, messages: user('stream please'), max_tokens: 12, temperature: 0 };
    const whole = await openai.chat.completions.create(params);
    const stream = await openai.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, whole.usage);
    assert.equal(chunks.at(-2)!.choices[0].finish_reason, whole.choices[0].finish_reason);
  });

  it('streamed without include_usage: no usage chunk; raw SSE ends with [DONE]', async () => {
    const res = await h.post('/v1/chat/completions', { model: MODEL, messages: user('x'), max_tokens: 3, stream: true });
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const events = (await res.text()).split('\n\n').filter(Boolean);
    assert.equal(events.at(-1), 'data: [DONE]');
    assert.ok(events.slice(0, -1).every((e) => !('usage' in JSON.parse(e.slice(6)))));
  });

  it('n > 1 gives n choices; seed makes sampling repeatable', async () => {
    const req = { model: MODEL, messages: user('pick'), max_tokens: 6, temperature: 1, seed: 42, n: 2 };
    const a = await openai.chat.completions.create(req);
    const b = await openai.chat.completions.create(req);
    assert.equal(a.choices.length, 2);
    assert.deepEqual(a.choices.map((c) => c.message.content), b.choices.map((c) => c.message.content));
  });
});

const WEATHER = {
  type: 'function' as const,
  function: {
    name: 'weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { enum: ['c', 'f'] }, days: { type: 'integer', minimum: 1 } },
      required: ['city', 'unit', 'days'],
      additionalProperties: false,
    },
  },
};
const ADD = {
  type: 'function' as const,
  function: {
    name: 'add',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
};
// tiny-llama's context is 512 tokens and the template's tools block is long: tool definitions stay small

describe('tools', () => {
  it('a named function is forced on the random model: arguments parse and validate', async () => {
    const validate = ajv.compile(WEATHER.function.parameters);
    for (const seed of [1, 2, 3]) {
      const r = await openai.chat.completions.create({
        model: MODEL,
        messages: user('weather in Paris?'),
        tools: [WEATHER],
        tool_choice: { type: 'function', function: { name: 'weather' } },
        temperature: 1,
        seed,
      });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls');
      const call = c.message.tool_calls![0];
      assert.equal(call.type, 'function');
      assert.match(call.id, /^call_/);
      assert.ok(call.type === 'function' && call.function.name === 'weather');
      const args = JSON.parse(call.function.arguments);
      assert.ok(validate(args), JSON.stringify(validate.errors));
    }
  });

  it('required, streamed: a tool_calls delta with one of the tools', async () => {
    const stream = await openai.chat.completions.create({
      model: MODEL,
      messages: user('add'),
      tools: [ADD, { type: 'function', function: { name: 'ping' } }],
      tool_choice: 'required',
      stream: true,
      temperature: 0,
    });
    const calls = [];
    let finish = '';
    for await (const ch of stream) {
      calls.push(...(ch.choices[0]?.delta?.tool_calls ?? []));
      finish ||= ch.choices[0]?.finish_reason ?? '';
    }
    assert.equal(finish, 'tool_calls');
    // OpenAI's shape: the first delta has id, type and name; the arguments follow in fragments
    assert.ok(calls[0].id && calls[0].type === 'function' && ['add', 'ping'].includes(calls[0].function!.name!));
    assert.ok(calls.slice(1).every((c) => c.id === undefined && c.function?.name === undefined && c.index === 0));
    const args = calls.map((c) => c.function?.arguments ?? '').join('');
    assert.equal(typeof JSON.parse(args), 'object');
    if (calls[0].function!.name === 'add') assert.ok(calls.length > 2, 'arguments arrive in several fragments');
  });

  it('forced call streamed: the client library accumulates the fragments into a valid call', async () => {
    const validate = ajv.compile(ADD.function.parameters);
    for (const seed of [1, 2, 3]) {
      const runner = openai.chat.completions.stream({
        model: MODEL,
        messages: user('add'),
        tools: [ADD],
        tool_choice: { type: 'function', function: { name: 'add' } },
        temperature: 1,
        seed,
      });
      const fragments: string[] = [];
      runner.on('tool_calls.function.arguments.delta', (e) => fragments.push(e.arguments_delta));
      const final = await runner.finalChatCompletion();
      const call = final.choices[0].message.tool_calls![0] as { function: { name: string; arguments: string } };
      assert.equal(call.function.name, 'add');
      assert.equal(fragments.join(''), call.function.arguments);
      assert.ok(fragments.length > 1);
      assert.ok(validate(JSON.parse(call.function.arguments)), call.function.arguments);
    }
  });

  it('auto: a call in the model output is parsed into tool_calls; the tool result is fed back', async () => {
    await h.steered('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>', async () => {
      const r = await openai.chat.completions.create({ model: MODEL, messages: user('1+2?'), tools: [ADD], max_tokens: 60 });
      const call = r.choices[0].message.tool_calls![0];
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      assert.ok(call.type === 'function');
      assert.deepEqual(JSON.parse(call.function.arguments), { a: 1, b: 2 });
      h.steer(undefined);
      const next = await openai.chat.completions.create({
        model: MODEL,
        tools: [ADD],
        max_tokens: 4,
        messages: [...user('1+2?'), r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '3' }],
      });
      assert.ok(next.usage!.prompt_tokens > r.usage!.prompt_tokens, 'the call and its result are in the prompt');
    });
  });
});

describe('tools, auto, streamed', () => {
  const TOOL_CALL = 479; // tiny-llama's <tool_call> token

  it('a call the model makes on its own streams in fragments; the client accumulates a valid call', async () => {
    await h.steered('<tool_call>\n{"name": "add", "arguments": {"a": 12.5, "b": 2}}\n</tool_call>', async () => {
      const runner = openai.chat.completions.stream({ model: MODEL, messages: user('12.5+2?'), tools: [ADD], max_tokens: 120 });
      const fragments: string[] = [];
      const deltas: OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
      runner.on('chunk', (c) => deltas.push(...(c.choices[0]?.delta?.tool_calls ?? [])));
      runner.on('tool_calls.function.arguments.delta', (e) => fragments.push(e.arguments_delta));
      const final = await runner.finalChatCompletion();
      assert.equal(final.choices[0].finish_reason, 'tool_calls');
      const call = final.choices[0].message.tool_calls![0] as { id: string; function: { name: string; arguments: string } };
      assert.equal(call.function.name, 'add');
      assert.match(call.id, /^call_/);
      // OpenAI's shape: the first delta has id, type and name; the arguments follow in several fragments
      assert.ok(deltas[0].id && deltas[0].type === 'function' && deltas[0].function?.name === 'add');
      assert.ok(deltas.slice(1).every((d) => d.id === undefined && d.function?.name === undefined && d.index === 0));
      assert.ok(fragments.filter(Boolean).length > 2, `fragments: ${JSON.stringify(fragments)}`);
      assert.equal(fragments.join(''), call.function.arguments);
      assert.deepEqual(JSON.parse(call.function.arguments), { a: 12.5, b: 2 });
    });
  });

  it('a random model nudged toward <tool_call>: every call it starts parses and validates (constrained once started)', async () => {
    const validate = ajv.compile(WEATHER.function.parameters);
    // the call token made likely; everything after it is the model's own (random) choice
    const nudge = (_ids: bigint[][], logits: { data: Float32Array }) => ((logits.data[TOOL_CALL] += 6), logits);
    h.steer(() => [nudge]);
    let made = 0;
    try {
      for (const seed of [1, 2, 3, 4, 5, 6]) {
        const stream = await openai.chat.completions.create({
          model: MODEL,
          messages: user('weather?'),
          tools: [WEATHER],
          max_tokens: 220, // the budget counts bytes: a call needs about 90
          temperature: 1,
          seed,
          stream: true,
        });
        const byIndex = new Map<number, { name: string; args: string; pieces: number }>();
        for await (const ch of stream) {
          for (const d of ch.choices[0]?.delta?.tool_calls ?? []) {
            const c = byIndex.get(d.index) ?? { name: '', args: '', pieces: 0 };
            c.name += d.function?.name ?? '';
            c.args += d.function?.arguments ?? '';
            c.pieces++;
            byIndex.set(d.index, c);
          }
        }
        for (const c of byIndex.values()) {
          made++;
          assert.equal(c.name, 'weather');
          assert.ok(validate(JSON.parse(c.args)), `seed ${seed}: ${c.args} ${JSON.stringify(validate.errors)}`);
          assert.ok(c.pieces > 2, `seed ${seed}: ${c.pieces} deltas`);
        }
      }
    } finally {
      h.steer(undefined);
    }
    assert.ok(made >= 3, `${made} calls made`);
  });
});

describe('structured output', () => {
  const schema = {
    type: 'object',
    properties: {
      title: { type: 'string', maxLength: 20 },
      status: { type: 'string', enum: ['open', 'closed', 'pending'] },
      owner: {
        type: 'object',
        properties: { name: { type: 'string' }, id: { type: 'integer' }, admin: { type: 'boolean' } },
        required: ['name', 'id', 'admin'],
        additionalProperties: false,
      },
      tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 3 },
      points: {
        type: 'array',
        items: {
          type: 'object',
          properties: { x: { type: 'number' }, y: { type: 'number' } },
          required: ['x', 'y'],
          additionalProperties: false,
        },
      },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    },
    required: ['title', 'status', 'owner', 'tags', 'points', 'note'],
    additionalProperties: false,
  };
  const validate = ajv.compile(schema);

  it('json_schema strict on the random model: output parses and validates (several seeds, tight budget too)', async () => {
    for (const [seed, max] of [[1, 250], [2, 200], [3, 140], [4, 110]] as const) {
      const r = await openai.chat.completions.create({
        model: MODEL,
        messages: user('make an issue'),
        max_tokens: max,
        temperature: 1,
        seed,
        response_format: { type: 'json_schema', json_schema: { name: 'issue', strict: true, schema } },
      });
      const text = r.choices[0].message.content!;
      const v = JSON.parse(text);
      assert.ok(validate(v), `${text}\n${JSON.stringify(validate.errors)}`);
      assert.equal(r.choices[0].finish_reason, 'stop');
      assert.ok(r.usage!.completion_tokens <= max);
    }
  });

  it('json_object, streamed: the concatenated deltas are one JSON object', async () => {
    const stream = await openai.chat.completions.create({
      model: MODEL,
      messages: user('json'),
      max_tokens: 40,
      response_format: { type: 'json_object' },
      stream: true,
    });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    const v = JSON.parse(text);
    assert.ok(v && typeof v === 'object' && !Array.isArray(v));
  });

  it('an unsupported schema feature is a 400 naming it; so is a budget too small', async () => {
    await assert.rejects(
      openai.chat.completions.create({
        model: MODEL,
        messages: user('x'),
        response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'string', pattern: '^(a)\\1$' } } },
      }),
      (e: unknown) =>
        e instanceof OpenAI.BadRequestError && /a backreference in the pattern .* is not supported/.test(e.message) &&
        (e.error as { code?: string }).code === 'unsupported_schema',
    );
    await assert.rejects(
      openai.chat.completions.create({
        model: MODEL,
        messages: user('x'),
        max_tokens: 5,
        response_format: { type: 'json_schema', json_schema: { name: 's', schema } },
      }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /budget of 5 tokens \(max_tokens/.test(e.message),
    );
  });
});

describe('errors, refusals, extensions', () => {
  it('unknown model: 404 in the dialect A envelope', async () => {
    await assert.rejects(
      openai.chat.completions.create({ model: 'no-such-model', messages: user('x') }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
    const res = await h.post('/v1/chat/completions', { model: 'no-such-model', messages: user('x') });
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.equal(typeof body.error.message, 'string');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.ok('code' in body.error && 'param' in body.error);
  });

  for (
    const [field, value] of [
      ['audio', { voice: 'alloy', format: 'mp3' }],
      ['modalities', ['text', 'audio']],
      ['prediction', { type: 'content', content: 'x' }],
      ['web_search_options', {}],
      ['functions', [{ name: 'f' }]],
    ] as const
  ) {
    it(`refuses ${field} by name`, async () => {
      const res = await h.post('/v1/chat/completions', { model: MODEL, messages: user('x'), [field]: value });
      assert.equal(res.status, 400);
      const body = await res.json();
      assert.match(body.error.message, new RegExp(`^${field}:`));
      assert.equal(body.error.param, field);
    });
  }

  it('extension fields: unknown agent / skill / server tool are 400s; absent ones behave as the plain dialect', async () => {
    for (
      const [k, v, re] of [['agent', 'helper', /unknown agent "helper"/], ['skill', 'summarize', /unknown skill "summarize"/], [
        'server_tools',
        ['search'],
        /unknown server tool "search"/,
      ], ['memory_store', 'm1', /unknown memory store/]] as const
    ) {
      await assert.rejects(
        openai.chat.completions.create({ model: MODEL, messages: user('x'), [k]: v } as never),
        (e: unknown) => e instanceof OpenAI.BadRequestError && re.test(e.message),
      );
    }
    const r = await openai.chat.completions.create({ model: MODEL, messages: user('x'), max_tokens: 2, agent: null } as never);
    assert.equal(r.object, 'chat.completion');
  });

  it('images are refused for a model without vision', async () => {
    await assert.rejects(
      openai.chat.completions.create({
        model: MODEL,
        messages: [{
          role: 'user',
          content: [{ type: 'text', text: 'what?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }],
        }],
      }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && /vision/.test(e.message),
    );
  });

  it('a failure after streaming began arrives as an error event', async () => {
    const boom = failAfter(3);
    h.steer(() => [boom]);
    try {
      const stream = await openai.chat.completions.create({ model: MODEL, messages: user('x'), max_tokens: 20, stream: true });
      const got: unknown[] = [];
      await assert.rejects(async () => {
        for await (const c of stream) got.push(c);
      }, (e: unknown) => e instanceof OpenAI.APIError && /Internal server error/.test(e.message));
      assert.ok(got.length >= 1, 'chunks came before the error');
    } finally {
      h.steer(undefined);
    }
  });

  it('a client that disconnects cancels the generation and frees the slot', async () => {
    const ac = new AbortController();
    const res = await fetch(`${h.srv.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      signal: ac.signal,
      body: JSON.stringify({ model: MODEL, messages: user('long'), max_tokens: 400, stream: true, temperature: 1 }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    for (let i = 0; i < 100 && h.srv.engine.list().some((m) => m.active > 0); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(h.srv.engine.list().every((m) => m.active === 0), 'no generation holds a slot');
  });
});

describe('completions', () => {
  it('prompt string with echo; usage', async () => {
    const r = await openai.completions.create({ model: MODEL, prompt: 'Once upon', max_tokens: 5, temperature: 0, echo: true });
    assert.equal(r.object, 'text_completion');
    assert.ok(r.choices[0].text.startsWith('Once upon'));
    assert.ok(r.usage!.completion_tokens <= 5 && r.usage!.prompt_tokens > 0);
  });

  it('prompt array: one choice per prompt; stream matches the non-streamed text', async () => {
    const r = await openai.completions.create({ model: MODEL, prompt: ['a', 'b'], max_tokens: 4, temperature: 0 });
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
    const s = await openai.completions.create({
      model: MODEL,
      prompt: 'a',
      max_tokens: 4,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage;
    for await (const c of s) {
      text += c.choices[0]?.text ?? '';
      usage = c.usage ?? usage;
    }
    assert.equal(text, r.choices[0].text);
    assert.ok(usage && usage.completion_tokens > 0);
  });
});

describe('embeddings and models', () => {
  const EMB = 'tiny-bert-embed:test';
  it('float and base64 (little-endian float32) agree; dimensions truncates and renormalises', async () => {
    const f = await openai.embeddings.create({ model: EMB, input: ['hello world', 'second'], encoding_format: 'float' });
    assert.equal(f.data.length, 2);
    assert.ok(f.usage.prompt_tokens > 0);
    const raw = await h.post('/v1/embeddings', { model: EMB, input: 'hello world', encoding_format: 'base64' });
    const b64 = (await raw.json()).data[0].embedding as string;
    const buf = Buffer.from(b64, 'base64');
    const dec = Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
    assert.equal(dec.length, f.data[0].embedding.length);
    dec.forEach((x, i) => assert.ok(Math.abs(x - f.data[0].embedding[i]) < 1e-6));
    // the client's own base64 decoding gives the same numbers
    const viaClient = await openai.embeddings.create({ model: EMB, input: 'hello world' });
    viaClient.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - f.data[0].embedding[i]) < 1e-6));
    const d = await openai.embeddings.create({ model: EMB, input: 'hello world', dimensions: 8, encoding_format: 'float' });
    assert.equal(d.data[0].embedding.length, 8);
    assert.ok(Math.abs(Math.hypot(...d.data[0].embedding) - 1) < 1e-5);
  });

  it('Prefer: respond-async gives a 202 job whose result is the same body', async () => {
    const res = await h.post('/v1/embeddings', { model: EMB, input: 'later' }, {
      headers: { 'content-type': 'application/json', prefer: 'respond-async' },
    });
    assert.equal(res.status, 202);
    const { job_id } = await res.json();
    let job: Record<string, any> = {};
    for (let i = 0; i < 100; i++) {
      job = await (await fetch(`${h.srv.url}/svc/v1/jobs/${job_id}`)).json();
      if (job.status !== 'processing') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(job.status, 'completed');
    assert.equal(job.result.object, 'list');
    assert.equal(job.result.data[0].embedding.length > 0, true);
  });

  it('models list and retrieve; unknown id is a 404', async () => {
    const list = await openai.models.list();
    assert.ok(list.data.some((m) => m.id === MODEL));
    assert.equal((await openai.models.retrieve(MODEL)).id, MODEL);
    await assert.rejects(openai.models.retrieve('nope:1'), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });
});
