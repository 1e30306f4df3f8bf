/**
 * The Responses API, vector stores and file_search, judged by the official `openai` client against a
 * listening server (tiny random fixture models through the hub stand-in; a logits processor steers the
 * model where a test needs a given output): create (string, items), stream (event order, sequence
 * numbers), retrieve, delete, input_items paging, chaining, tools, text.format checked by ajv, refusals,
 * incomplete, per-key isolation, vector store lifecycle with a PDF (full text before embeddings, vectors
 * after), search, and file_search with citations.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import OpenAI, { toFile } from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import { failAfter, type Harness, startHarness } from '../ollama/harness.ts';
import { makePdf } from '../../services/pdf/helpers.ts';

let h: Harness;
let openai: OpenAI;
let other: OpenAI;
let tokenA = '';
const MODEL = 'tiny-llama:test';
const EMB = 'tiny-bert-embed:test';
const ajv = new Ajv({ strict: false });

before(async () => {
  h = await startHarness({ defaultEmbeddingModel: EMB });
  const a = await h.srv.keys.create({ name: 'a' });
  const b = await h.srv.keys.create({ name: 'b' });
  tokenA = a.token;
  openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: a.token, maxRetries: 0 });
  other = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: b.token, maxRetries: 0 });
});
after(async () => {
  h.steer(undefined);
  await h?.close();
});

const post = (path: string, body: unknown) =>
  fetch(`${h.srv.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tokenA}` },
    body: JSON.stringify(body),
  });

/** The two turns sent whole in one request: what a continued second turn must cost in input tokens. */
const wholeConversation = (question: string, answer: string, next: string) =>
  openai.responses.create({
    model: MODEL,
    max_output_tokens: 2,
    input: [{ role: 'user', content: question }, { role: 'assistant', content: answer }, { role: 'user', content: next }],
  });

describe('responses: create, retrieve, delete', () => {
  it('string input: a completed response with one assistant message and usage; retrieve gives the same object', async () => {
    const r = await h.steered('Hello there', () => openai.responses.create({ model: MODEL, input: 'say hello', max_output_tokens: 20 }));
    assert.match(r.id, /^resp_/);
    assert.equal(r.object, 'response');
    assert.equal(r.status, 'completed');
    assert.equal(r.output.length, 1);
    const msg = r.output[0]!;
    assert.ok(msg.type === 'message' && msg.role === 'assistant');
    assert.equal(r.output_text, 'Hello there');
    assert.ok(r.usage && r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0);
    const got = await openai.responses.retrieve(r.id);
    assert.deepEqual(got, r);
  });

  it('item input with developer and user messages and content parts', async () => {
    const r = await openai.responses.create({
      model: MODEL,
      max_output_tokens: 4,
      input: [
        { type: 'message', role: 'developer', content: 'Be brief.' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'one' }, { type: 'input_text', text: 'two' }] },
      ],
    });
    assert.ok(['completed', 'incomplete'].includes(r.status!));
    assert.ok(r.usage!.input_tokens > 5);
  });

  it('max_output_tokens cutting the answer: status incomplete with reason max_output_tokens', async () => {
    const r = await h.steered(
      'one two three four five six seven eight nine ten',
      () => openai.responses.create({ model: MODEL, input: 'count', max_output_tokens: 3 }),
    );
    assert.equal(r.status, 'incomplete');
    assert.equal(r.incomplete_details?.reason, 'max_output_tokens');
    assert.equal(r.usage!.output_tokens, 3);
  });

  it('a thinking model: a reasoning item with the reasoning text before the message; reasoning tokens in usage', async () => {
    const r = await h.steered(
      '<think>\nThe user greets me.\n</think>\n\nHi!',
      () => openai.responses.create({ model: MODEL, input: 'hello', max_output_tokens: 40 }),
    );
    assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'message']);
    const rs = r.output[0] as OpenAI.Responses.ResponseReasoningItem;
    assert.match(rs.content![0]!.text, /The user greets me\./);
    assert.equal(r.output_text.trim(), 'Hi!');
    const u = r.usage!;
    assert.ok(
      u.output_tokens_details.reasoning_tokens > 0 && u.output_tokens_details.reasoning_tokens < u.output_tokens,
      JSON.stringify(u),
    );
    // fed back as input, the reasoning item is accepted (passthrough)
    const next = await openai.responses.create({
      model: MODEL,
      max_output_tokens: 2,
      input: [{ role: 'user', content: 'hello' }, rs as never, { role: 'assistant', content: 'Hi!' }, { role: 'user', content: 'again' }],
    });
    assert.ok(['completed', 'incomplete'].includes(next.status!));
  });

  it('delete, then retrieve and input_items are 404; delete again is 404', async () => {
    const r = await openai.responses.create({ model: MODEL, input: 'x', max_output_tokens: 2 });
    assert.deepEqual(await openai.responses.delete(r.id), { id: r.id, object: 'response', deleted: true });
    await assert.rejects(openai.responses.retrieve(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(openai.responses.inputItems.list(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(openai.responses.delete(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });

  it('store: false is not retrievable', async () => {
    const r = await openai.responses.create({ model: MODEL, input: 'x', max_output_tokens: 2, store: false });
    assert.equal((r as unknown as { store: boolean }).store, false);
    await assert.rejects(openai.responses.retrieve(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });
});

describe('responses: streaming', () => {
  it('events in order with monotonic sequence numbers; the final response is the stored one', async () => {
    const stream = await h.steered('abc def', async () => {
      const s = await openai.responses.create({ model: MODEL, input: 'stream', stream: true, max_output_tokens: 20 });
      const events = [];
      for await (const e of s) events.push(e);
      return events;
    });
    const types = stream.map((e) => e.type);
    const deltas = types.filter((t) => t === 'response.output_text.delta').length;
    assert.ok(deltas >= 1);
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array(deltas).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    stream.forEach((e, i) => assert.equal(e.sequence_number, i));
    const text = stream.filter((e) => e.type === 'response.output_text.delta').map((e) => (e as { delta: string }).delta).join('');
    assert.equal(text, 'abc def');
    const done = stream.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    assert.equal(done.response.status, 'completed');
    assert.equal(done.response.output_text ?? (done.response.output[0] as { content: { text: string }[] }).content[0]!.text, 'abc def');
    const stored = await openai.responses.retrieve(done.response.id);
    assert.equal(stored.output_text, 'abc def');
  });

  it('raw SSE frames carry event: lines matching data.type and no [DONE]', async () => {
    const res = await post('/v1/responses', { model: MODEL, input: 'x', stream: true, max_output_tokens: 3 });
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    for (const f of frames) {
      const [ev, data] = f.split('\n');
      assert.equal(ev!.slice(7), JSON.parse(data!.slice(6)).type);
    }
    assert.ok(!frames.some((f) => f.includes('[DONE]')));
  });

  it('a failure after the stream began: response.failed with the error, then an error event the client raises', async () => {
    const boom = failAfter(3);
    h.steer(() => [boom]);
    try {
      const s = await openai.responses.create({ model: MODEL, input: 'x', stream: true, max_output_tokens: 20 });
      const got: { type: string; response?: { status?: string; error?: unknown } }[] = [];
      await assert.rejects(async () => {
        for await (const e of s) got.push(e);
      }, (e: unknown) => e instanceof OpenAI.APIError && /Internal server error/.test(e.message));
      const failed = got.at(-1)!;
      assert.equal(failed.type, 'response.failed');
      assert.equal(failed.response!.status, 'failed');
      assert.ok(failed.response!.error);
      assert.ok(got.some((e) => e.type === 'response.output_text.delta'), 'text came before the failure');
    } finally {
      h.steer(undefined);
    }
  });

  it('an unknown model fails before the stream with 404', async () => {
    const res = await post('/v1/responses', { model: 'no-such-model', input: 'x', stream: true });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.type, 'invalid_request_error');
  });

  it('a client that disconnects frees the slot', async () => {
    const ac = new AbortController();
    const res = await fetch(`${h.srv.url}/v1/responses`, {
      method: 'POST',
      signal: ac.signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tokenA}` },
      body: JSON.stringify({ model: MODEL, input: 'long', stream: true, max_output_tokens: 400, temperature: 1 }),
    });
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    for (let i = 0; i < 100 && h.srv.engine.list().some((m) => m.active > 0); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(h.srv.engine.list().every((m) => m.active === 0));
  });
});

describe('responses: input items and chaining', () => {
  it('input_items pages in both orders with after and limit (default desc)', async () => {
    const input = ['a', 'b', 'c', 'd', 'e'].map((t) => ({ type: 'message' as const, role: 'user' as const, content: t }));
    const r = await openai.responses.create({ model: MODEL, input, max_output_tokens: 2 });
    const all = await openai.responses.inputItems.list(r.id);
    const texts = (items: OpenAI.Responses.ResponseItem[]) => items.map((i) => ((i as { content: { text: string }[] }).content[0]!.text));
    assert.deepEqual(texts(all.data), ['e', 'd', 'c', 'b', 'a']);
    const p1 = await openai.responses.inputItems.list(r.id, { limit: 2 });
    assert.deepEqual(texts(p1.data), ['e', 'd']);
    assert.equal(p1.has_more, true);
    const p2 = await openai.responses.inputItems.list(r.id, { limit: 2, after: p1.data.at(-1)!.id });
    assert.deepEqual(texts(p2.data), ['c', 'b']);
    const asc = await openai.responses.inputItems.list(r.id, { order: 'asc', limit: 3 });
    assert.deepEqual(texts(asc.data), ['a', 'b', 'c']);
    const asc2 = await openai.responses.inputItems.list(r.id, { order: 'asc', after: asc.data.at(-1)!.id });
    assert.deepEqual(texts(asc2.data), ['d', 'e']);
    assert.equal(asc2.has_more, false);
    // the client follows has_more on its own
    const seen = [];
    for await (const it of openai.responses.inputItems.list(r.id, { limit: 2 })) seen.push(it);
    assert.equal(seen.length, 5);
    for (const limit of [0, 101]) {
      assert.equal(
        (await fetch(`${h.srv.url}/v1/responses/${r.id}/input_items?limit=${limit}`, { headers: { authorization: `Bearer ${tokenA}` } }))
          .status,
        400,
      );
    }
  });

  it('previous_response_id: the second prompt holds the first turn; instructions are not inherited', async () => {
    const first = await h.steered(
      'Paris',
      () =>
        openai.responses.create({
          model: MODEL,
          instructions: 'You answer geography questions in one word only.',
          input: 'Capital of France?',
          max_output_tokens: 8,
        }),
    );
    assert.equal(first.instructions, 'You answer geography questions in one word only.');
    const second = await openai.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: 'And of Spain?',
      max_output_tokens: 2,
    });
    assert.equal(second.previous_response_id, first.id);
    assert.equal(second.instructions, null);
    // the stored input is the effective one: first input, first output, new input
    const items = await openai.responses.inputItems.list(second.id, { order: 'asc' });
    assert.deepEqual(items.data.map((i) => (i as { role?: string }).role), ['user', 'assistant', 'user']);
    assert.equal((items.data[1] as { content: { text: string }[] }).content[0]!.text, 'Paris');
    // the same conversation sent whole (no instructions) gives exactly the same prompt length
    const whole = await wholeConversation('Capital of France?', 'Paris', 'And of Spain?');
    assert.equal(second.usage!.input_tokens, whole.usage!.input_tokens);
    assert.ok(second.usage!.input_tokens > first.usage!.input_tokens - 12, 'the first turn is in the prompt');
    await assert.rejects(
      openai.responses.create({ model: MODEL, previous_response_id: 'resp_nope', input: 'x' }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && (e.error as { code?: string }).code === 'previous_response_not_found',
    );
  });
});

const WEATHER = {
  type: 'function' as const,
  name: 'weather',
  strict: true,
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
    required: ['city', 'days'],
    additionalProperties: false,
  },
};

describe('responses: tools and structured output', () => {
  it('tool_choice required: a function_call item whose arguments validate; its output fed back through previous_response_id', async () => {
    const validate = ajv.compile(WEATHER.parameters);
    const r = await openai.responses.create({
      model: MODEL,
      input: 'weather in Paris?',
      tools: [WEATHER],
      tool_choice: 'required',
      temperature: 1,
      // bounded so the second turn (this call's arguments in its prompt) stays inside the tiny model's 512-token context
      max_output_tokens: 80,
    });
    const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    assert.ok(call, JSON.stringify(r.output));
    assert.equal(call.name, 'weather');
    assert.match(call.call_id, /^call_/);
    assert.ok(validate(JSON.parse(call.arguments)), JSON.stringify(validate.errors));
    const next = await openai.responses.create({
      model: MODEL,
      previous_response_id: r.id,
      tools: [WEATHER],
      max_output_tokens: 3,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp": 21}' }],
    });
    assert.ok(['completed', 'incomplete'].includes(next.status!));
    const items = await openai.responses.inputItems.list(next.id, { order: 'asc' });
    assert.deepEqual(items.data.map((i) => i.type), ['message', 'function_call', 'function_call_output']);
    assert.ok(next.usage!.input_tokens > r.usage!.input_tokens, 'the call and its result are in the prompt');
  });

  it('a named function, streamed: function_call_arguments events and the item', async () => {
    const s = await openai.responses.create({
      model: MODEL,
      input: 'weather?',
      tools: [WEATHER],
      tool_choice: { type: 'function', name: 'weather' },
      stream: true,
    });
    const events = [];
    for await (const e of s) events.push(e);
    const types = events.map((e) => e.type);
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const done = events[4] as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
    assert.equal(typeof JSON.parse(done.arguments), 'object');
  });

  it('a call in the model output (tool_choice auto) becomes a function_call item', async () => {
    const r = await h.steered(
      '<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo", "days": 2}}\n</tool_call>',
      () => openai.responses.create({ model: MODEL, input: 'weather in Oslo?', tools: [WEATHER], max_output_tokens: 60 }),
    );
    const call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    assert.deepEqual(JSON.parse(call.arguments), { city: 'Oslo', days: 2 });
  });

  it('a call the model makes on its own, streamed: function_call_arguments.delta in fragments, done with the whole', async () => {
    const events = await h.steered(
      '<tool_call>\n{"name": "weather", "arguments": {"city": "Oslo", "days": 12}}\n</tool_call>',
      async () => {
        const out = [];
        // the budget counts bytes: a constrained call needs about 70 here (a smaller one leaves calls unconstrained)
        const s = await openai.responses.create({
          model: MODEL,
          input: 'weather in Oslo?',
          tools: [WEATHER],
          max_output_tokens: 120,
          stream: true,
        });
        for await (const e of s) out.push(e);
        return out;
      },
    );
    const types = events.map((e) => e.type).filter((t) => t !== 'response.function_call_arguments.delta');
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const deltas = events.filter((e) =>
      e.type === 'response.function_call_arguments.delta'
    ) as OpenAI.Responses.ResponseFunctionCallArgumentsDeltaEvent[];
    assert.ok(deltas.length > 2, JSON.stringify(deltas.map((d) => d.delta)));
    const done = events.find((e) =>
      e.type === 'response.function_call_arguments.done'
    ) as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
    assert.equal(deltas.map((d) => d.delta).join(''), done.arguments);
    assert.deepEqual(JSON.parse(done.arguments), { city: 'Oslo', days: 12 });
    const item = (events.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    assert.equal(item.name, 'weather');
    assert.equal(item.arguments, done.arguments);
  });

  it('text.format json_schema on the random model: output_text parses and validates (several seeds)', async () => {
    const schema = {
      type: 'object',
      properties: {
        title: { type: 'string', maxLength: 20 },
        status: { enum: ['open', 'closed'] },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
        n: { type: 'integer' },
      },
      required: ['title', 'status', 'tags', 'n'],
      additionalProperties: false,
    };
    const validate = ajv.compile(schema);
    for (const seed of [1, 2, 3]) {
      const r = await openai.responses.create({
        model: MODEL,
        input: 'make an issue',
        temperature: 1,
        max_output_tokens: 120,
        seed,
        text: { format: { type: 'json_schema', name: 'issue', schema, strict: true } },
      } as never) as OpenAI.Responses.Response;
      const v = JSON.parse(r.output_text);
      assert.ok(validate(v), `${r.output_text}\n${JSON.stringify(validate.errors)}`);
      assert.equal(r.status, 'completed');
    }
    const j = await openai.responses.create({
      model: MODEL,
      input: 'json',
      max_output_tokens: 40,
      text: { format: { type: 'json_object' } },
    });
    const obj = JSON.parse(j.output_text);
    assert.ok(obj && typeof obj === 'object' && !Array.isArray(obj));
  });
});

describe('responses: refusals and isolation', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['conversation', { conversation: 'conv_1' }, /^conversation:/],
    ['background', { background: true }, /^background:/],
    ['tools[0].type', { tools: [{ type: 'web_search' }] }, /^tools\[0\]\.type: hosted tool type "web_search"/],
    ['input[0].type', { input: [{ type: 'item_reference', id: 'msg_1' }] }, /^input\[0\]\.type: item_reference/],
  ];
  for (const [param, extra, re] of cases) {
    it(`refuses ${param} with a 400 naming it`, async () => {
      const res = await post('/v1/responses', { model: MODEL, input: 'x', ...extra });
      assert.equal(res.status, 400);
      const body = await res.json();
      assert.match(body.error.message, re);
      assert.equal(body.error.param, param);
    });
  }

  it('another key sees 404 for a response and cannot chain from it', async () => {
    const r = await openai.responses.create({ model: MODEL, input: 'mine', max_output_tokens: 2 });
    await assert.rejects(other.responses.retrieve(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(other.responses.delete(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(other.responses.inputItems.list(r.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    await assert.rejects(
      other.responses.create({ model: MODEL, previous_response_id: r.id, input: 'x' }),
      (e: unknown) => e instanceof OpenAI.BadRequestError,
    );
    assert.equal((await openai.responses.retrieve(r.id)).id, r.id);
  });

  it('input_file by file_id: the document text is folded into the prompt', async () => {
    const f = await openai.files.create({
      file: await toFile(Buffer.from('The secret harbour code is 4711.\n'.repeat(5)), 'note.txt'),
      purpose: 'user_data',
    });
    const plain = await openai.responses.create({ model: MODEL, input: 'What is the code?', max_output_tokens: 2 });
    const withFile = await openai.responses.create({
      model: MODEL,
      max_output_tokens: 2,
      input: [{ role: 'user', content: [{ type: 'input_file', file_id: f.id }, { type: 'input_text', text: 'What is the code?' }] }],
    });
    assert.ok(withFile.usage!.input_tokens > plain.usage!.input_tokens + 40);
    await assert.rejects(
      other.responses.create({ model: MODEL, input: [{ role: 'user', content: [{ type: 'input_file', file_id: f.id }] }] }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
  });

  it('input_file by file_data: a base64 data URL is read like an upload; bytes that are not base64 are a 400 naming the field', async () => {
    const note = Buffer.from('The secret harbour code is 4711.\n'.repeat(5)).toString('base64');
    const ask = (file_data: string) =>
      openai.responses.create({
        model: MODEL,
        max_output_tokens: 2,
        input: [{
          role: 'user',
          content: [{ type: 'input_file', filename: 'note.txt', file_data }, { type: 'input_text', text: 'What is the code?' }],
        }],
      });
    const plain = await openai.responses.create({ model: MODEL, input: 'What is the code?', max_output_tokens: 2 });
    const withFile = await ask(`data:text/plain;base64,${note}`);
    assert.ok(withFile.usage!.input_tokens > plain.usage!.input_tokens + 40);
    await assert.rejects(ask('data:text/plain;base64,not base64 at all!'), (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.match(e.message, /input_file\.file_data/);
      return true;
    });
  });
});

describe('files', () => {
  it('upload, retrieve, list, content, delete; private to the key', async () => {
    const f = await openai.files.create({ file: await toFile(Buffer.from('hello files'), 'h.txt'), purpose: 'assistants' });
    assert.equal(f.purpose, 'assistants');
    assert.equal(f.bytes, 11);
    assert.equal((await openai.files.retrieve(f.id)).filename, 'h.txt');
    assert.ok((await openai.files.list()).data.some((x) => x.id === f.id));
    assert.equal(await (await openai.files.content(f.id)).text(), 'hello files');
    await assert.rejects(other.files.retrieve(f.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    assert.ok(!(await other.files.list()).data.some((x) => x.id === f.id));
    assert.equal((await openai.files.delete(f.id)).deleted, true);
    await assert.rejects(openai.files.retrieve(f.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });
});

describe('vector stores and file_search', () => {
  const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b));

  it('lifecycle: a PDF is full-text searchable at once, semantically after embedding, then completed; delete removes it', async () => {
    // hold the background embedding until the full-text checks are done
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const embed = h.srv.chat.embed.bind(h.srv.chat);
    h.srv.chat.embed = async (...a: Parameters<typeof embed>) => {
      await gate;
      return embed(...a);
    };
    try {
      const pdf = await makePdf(2, {
        lines: (
          p,
        ) => (p === 1
          ? ['Zebras graze on the savanna at dawn.', 'Their stripes confuse lions.']
          : ['Glaciers carve valleys over millennia.']),
      });
      const file = await openai.files.create({ file: await toFile(Buffer.from(pdf), 'animals.pdf'), purpose: 'assistants' });
      const vs = await openai.vectorStores.create({ name: 'nature' });
      assert.match(vs.id, /^vs_/);
      const vf = await openai.vectorStores.files.create(vs.id, { file_id: file.id, attributes: { topic: 'nature' } });
      assert.equal(vf.status, 'in_progress');
      assert.equal((await openai.vectorStores.retrieve(vs.id)).file_counts.in_progress, 1);
      const kw = await openai.vectorStores.search(vs.id, { query: 'zebras stripes' });
      assert.equal(kw.data.length, 1);
      assert.equal(kw.data[0]!.file_id, file.id);
      assert.equal(kw.data[0]!.filename, 'animals.pdf');
      assert.deepEqual(kw.data[0]!.attributes, { topic: 'nature' });
      assert.match(kw.data[0]!.content[0]!.text, /Zebras graze/);
      // words absent from the document find nothing before embeddings exist
      assert.equal((await openai.vectorStores.search(vs.id, { query: 'quokka marsupial' })).data.length, 0);
      release();
      await h.srv.vectorStores.settle();
      const done = await openai.vectorStores.files.retrieve(file.id, { vector_store_id: vs.id });
      assert.equal(done.status, 'completed', JSON.stringify(done.last_error));
      assert.equal((await openai.vectorStores.retrieve(vs.id)).status, 'completed');
      // after embedding, the same query is answered by the vectors: the chunk found, nearest first by the embedding model's own cosine
      const sem = await openai.vectorStores.search(vs.id, { query: 'quokka marsupial' });
      assert.ok(sem.data.length >= 1);
      const texts = sem.data.map((d) => d.content[0]!.text);
      const emb = await openai.embeddings.create({ model: EMB, input: ['quokka marsupial', ...texts], encoding_format: 'float' });
      const sims = emb.data.slice(1).map((d) => cosine(emb.data[0]!.embedding, d.embedding));
      for (let i = 1; i < sims.length; i++) assert.ok(sims[i - 1]! >= sims[i]! - 1e-4, `semantic order ${sims}`);
      // another key sees nothing of it
      await assert.rejects(other.vectorStores.retrieve(vs.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
      await assert.rejects(other.vectorStores.search(vs.id, { query: 'zebras' }), (e: unknown) => e instanceof OpenAI.NotFoundError);
      assert.ok(!(await other.vectorStores.list()).data.some((s) => s.id === vs.id));
      assert.ok((await openai.vectorStores.list()).data.some((s) => s.id === vs.id));
      assert.deepEqual((await openai.vectorStores.files.list(vs.id)).data.map((f) => f.id), [file.id]);
      // delete removes the store and everything indexed in it
      assert.equal((await openai.vectorStores.delete(vs.id)).deleted, true);
      await assert.rejects(openai.vectorStores.retrieve(vs.id), (e: unknown) => e instanceof OpenAI.NotFoundError);
      const left = await h.srv.store.db.selectFrom('retrieval_chunks').select('id').where('index_id', '=', vs.id).execute();
      assert.equal(left.length, 0);
    } finally {
      release();
      h.srv.chat.embed = embed;
    }
  });

  it('file_search in a response: a file_search_call item, the chunks in the prompt, file_citation annotations', async () => {
    const file = await openai.files.create({
      file: await toFile(Buffer.from('# Handbook\n\nThe office coffee machine is descaled every Friday by Marta.\n'), 'handbook.md'),
      purpose: 'assistants',
    });
    const vs = await openai.vectorStores.create({ name: 'handbook', file_ids: [file.id] });
    await h.srv.vectorStores.settle();
    const base = await openai.responses.create({ model: MODEL, input: 'Who descales the coffee machine?', max_output_tokens: 2 });
    const r = await h.steered('Marta does.', () =>
      openai.responses.create({
        model: MODEL,
        input: 'Who descales the coffee machine?',
        max_output_tokens: 10,
        tools: [{ type: 'file_search', vector_store_ids: [vs.id], max_num_results: 3 }],
        include: ['file_search_call.results'],
      }));
    assert.deepEqual(r.output.map((o) => o.type), ['file_search_call', 'message']);
    const fs = r.output[0] as OpenAI.Responses.ResponseFileSearchToolCall;
    assert.deepEqual(fs.queries, ['Who descales the coffee machine?']);
    assert.equal(fs.results![0]!.file_id, file.id);
    assert.match(fs.results![0]!.text!, /descaled every Friday/);
    const msg = r.output[1] as OpenAI.Responses.ResponseOutputMessage;
    const part = msg.content[0] as OpenAI.Responses.ResponseOutputText;
    assert.equal(part.text, 'Marta does.');
    assert.deepEqual(part.annotations, [{ type: 'file_citation', file_id: file.id, filename: 'handbook.md', index: part.text.length }]);
    assert.ok(r.usage!.input_tokens > base.usage!.input_tokens + 10, 'the retrieved chunk is in the prompt');
    // streamed: the file_search_call events come first, the annotation before output_text.done
    const s = await openai.responses.create({
      model: MODEL,
      input: 'coffee machine?',
      max_output_tokens: 3,
      tools: [{ type: 'file_search', vector_store_ids: [vs.id] }],
      stream: true,
    });
    const types = [];
    for await (const e of s) types.push(e.type);
    assert.deepEqual(types.slice(0, 7), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.file_search_call.in_progress',
      'response.file_search_call.searching',
      'response.file_search_call.completed',
      'response.output_item.done',
    ]);
    assert.ok(types.indexOf('response.output_text.annotation.added') < types.indexOf('response.output_text.done'));
    // a store of another key is a 404
    await assert.rejects(
      other.responses.create({ model: MODEL, input: 'x', tools: [{ type: 'file_search', vector_store_ids: [vs.id] }] }),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
  });

  it('default_embedding_model is an admin setting: without a model a file stays full-text searchable and fails with the reason', async () => {
    const admin = await h.srv.keys.create({ name: 'admin', role: 'admin' });
    const patch = (model: string) =>
      fetch(`${h.srv.url}/svc/v1/admin/settings`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.token}` },
        body: JSON.stringify({ default_embedding_model: model }),
      });
    assert.equal((await (await patch('')).json()).default_embedding_model, '');
    try {
      const file = await openai.files.create({
        file: await toFile(Buffer.from('Walruses sleep on ice floes.'), 'w.txt'),
        purpose: 'assistants',
      });
      const vs = await openai.vectorStores.create({ name: 'no-model', file_ids: [file.id] });
      await h.srv.vectorStores.settle();
      const f = await openai.vectorStores.files.retrieve(file.id, { vector_store_id: vs.id });
      assert.equal(f.status, 'failed');
      assert.match(f.last_error!.message, /default_embedding_model/);
      assert.equal((await openai.vectorStores.search(vs.id, { query: 'walruses' })).data.length, 1);
      // a store naming its own model embeds with it
      const own = await openai.vectorStores.create({ name: 'own', file_ids: [file.id], embedding_model: EMB } as never);
      await h.srv.vectorStores.settle();
      assert.equal((await openai.vectorStores.files.retrieve(file.id, { vector_store_id: own.id })).status, 'completed');
    } finally {
      assert.equal((await (await patch(EMB)).json()).default_embedding_model, EMB);
    }
  });

  it('attaching an unsupported file is a 415 and leaves nothing', async () => {
    const file = await openai.files.create({
      file: await toFile(Buffer.from([0, 1, 2, 3, 255, 254, 0, 9]), 'blob.bin'),
      purpose: 'assistants',
    });
    const vs = await openai.vectorStores.create({ name: 'x' });
    await assert.rejects(
      openai.vectorStores.files.create(vs.id, { file_id: file.id }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 415,
    );
    assert.equal((await openai.vectorStores.files.list(vs.id)).data.length, 0);
  });
});

/** One turn on a WebSocket: its events up to the terminal one (or the error message). */
function wsTurn(ws: ResponsesWS, body: Record<string, unknown>): Promise<{ events: Record<string, any>[]; error?: Record<string, any> }> {
  return new Promise((resolve) => {
    const events: Record<string, any>[] = [];
    const onEvent = (e: Record<string, any>) => {
      events.push(e);
      if (e.type === 'error' || ['response.completed', 'response.incomplete', 'response.failed'].includes(e.type)) {
        ws.off('event', onEvent as never);
        resolve({ events, error: e.type === 'error' ? e : undefined });
      }
    };
    ws.on('event', onEvent as never);
    ws.send({ type: 'response.create', ...body } as never);
  });
}

describe('responses: WebSocket mode and compaction', () => {
  it('several responses on one connection; store:false continuation there; previous_response_not_found once the connection is gone', async () => {
    const ws = new ResponsesWS(openai);
    ws.on('error', () => {});
    const first = await h.steered(
      'OK',
      () => wsTurn(ws, { model: MODEL, store: false, input: 'Remember the code word cobalt.', max_output_tokens: 5 }),
    );
    const types = first.events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    assert.equal(types.at(-1), 'response.completed');
    first.events.forEach((e, i) => assert.equal(e.sequence_number, i));
    const id = first.events.at(-1)!.response.id as string;
    const second = await wsTurn(ws, {
      model: MODEL,
      store: false,
      previous_response_id: id,
      input: 'What was the code word?',
      max_output_tokens: 2,
    });
    assert.equal(second.error, undefined, JSON.stringify(second.error));
    const whole = await wholeConversation('Remember the code word cobalt.', 'OK', 'What was the code word?');
    assert.equal(
      second.events.at(-1)!.response.usage.input_tokens,
      whole.usage!.input_tokens,
      'the first turn was continued from the connection',
    );
    // store:false responses live only on their connection
    await assert.rejects(openai.responses.retrieve(id), (e: unknown) => e instanceof OpenAI.NotFoundError);
    ws.close();
    const ws2 = new ResponsesWS(openai);
    ws2.on('error', () => {});
    const again = await wsTurn(ws2, { model: MODEL, store: false, previous_response_id: id, input: 'x' });
    assert.equal(again.error?.error?.code, 'previous_response_not_found');
    assert.equal(again.error?.status, 400);
    // a failed continuation forgets the response it continued
    const base = await wsTurn(ws2, { model: MODEL, store: false, input: 'y', max_output_tokens: 2 });
    const baseId = base.events.at(-1)!.response.id;
    const bad = await wsTurn(ws2, {
      model: MODEL,
      store: false,
      previous_response_id: baseId,
      input: [{ type: 'function_call_output', call_id: 'call_missing', output: 'z' }],
    });
    assert.equal(bad.error?.status, 400);
    const stale = await wsTurn(ws2, { model: MODEL, store: false, previous_response_id: baseId, input: 'z' });
    assert.equal(stale.error?.error?.code, 'previous_response_not_found');
    ws2.close();
  });

  it('compact: a compaction item that starts a new chain holding the whole conversation; model is required', async () => {
    const input = [{ role: 'user' as const, content: 'We launch on Tuesday.' }, { role: 'assistant' as const, content: 'Understood.' }];
    const c = await openai.responses.compact({ model: MODEL, input });
    assert.equal(c.object, 'response.compaction');
    const item = c.output.find((o) => o.type === 'compaction')!;
    assert.ok(item);
    const next = await openai.responses.create({
      model: MODEL,
      max_output_tokens: 2,
      input: [...c.output, { role: 'user', content: 'When?' }] as never,
    });
    const whole = await openai.responses.create({
      model: MODEL,
      max_output_tokens: 2,
      input: [...input, { role: 'user', content: 'When?' }],
    });
    assert.equal(next.usage!.input_tokens, whole.usage!.input_tokens);
    const res = await post('/v1/responses/compact', { input });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'model');
  });
});
