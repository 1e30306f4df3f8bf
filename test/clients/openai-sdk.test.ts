/**
 * The official `openai` Node SDK driven as a user drives it, against one listening server with the fixture
 * models: a key made through the admin API, models pagination, the chat stream helper and runTools (a real
 * two-turn tool loop), the responses stream helper and parse, embeddings with the SDK's default encoding,
 * files and vector stores with the polling helpers, and the SDK's typed errors (401, 404, 400).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { type Kysely, sql } from 'kysely';
import * as z from 'zod';
import { adminKey, type Harness, scripted, serverWithKey, toolCall } from './steer.ts';

let h: Harness;
let openai: OpenAI;
const MODEL = 'tiny-llama:test';
const EMB = 'tiny-bert-embed:test';

serverWithKey('openai-sdk', (s, key) => {
  h = s;
  openai = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: key, maxRetries: 0 });
}, { defaultEmbeddingModel: EMB });

const user = (content: string) => [{ role: 'user' as const, content }];

describe('openai SDK: auth and errors', () => {
  it('an unknown key is an AuthenticationError (401); no key at all too', async () => {
    const bad = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'svc_' + 'A'.repeat(43), maxRetries: 0 });
    await assert.rejects(
      bad.models.list(),
      (e: unknown) => e instanceof OpenAI.AuthenticationError && e.status === 401 && typeof e.message === 'string',
    );
    const foreign = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: 'sk-not-ours', maxRetries: 0 });
    await assert.rejects(foreign.chat.completions.create({ model: MODEL, messages: user('x'), max_tokens: 1 }), OpenAI.AuthenticationError);
  });

  it('unknown model: NotFoundError 404 with a message naming the model', async () => {
    await assert.rejects(openai.chat.completions.create({ model: 'no-such-model', messages: user('x') }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.NotFoundError, String(e));
      assert.equal(e.status, 404);
      assert.match(e.message, /no-such-model/);
      return true;
    });
    await assert.rejects(openai.responses.create({ model: 'no-such-model', input: 'x' }), OpenAI.NotFoundError);
    await assert.rejects(openai.embeddings.create({ model: 'no-such-model', input: 'x' }), OpenAI.NotFoundError);
    await assert.rejects(openai.models.retrieve('no-such-model'), OpenAI.NotFoundError);
  });

  it('a bad field: BadRequestError 400 with a message and the error body', async () => {
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: user('x'), temperature: 'hot' as never }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.status, 400);
        assert.ok(e.message.length > 0);
        assert.equal(typeof (e.error as { message?: unknown }).message, 'string');
        return true;
      },
    );
    await assert.rejects(openai.chat.completions.create({ model: MODEL, messages: [] }), OpenAI.BadRequestError);
    // a streamed request fails before the stream: the typed error still reaches the caller
    await assert.rejects(
      (async () => {
        for await (const _ of await openai.chat.completions.create({ model: 'no-such-model', messages: user('x'), stream: true })) void _;
      })(),
      OpenAI.NotFoundError,
    );
  });
});

describe('openai SDK: models', () => {
  it('list iterates every page; retrieve by id', async () => {
    const ids: string[] = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    assert.ok(ids.includes(MODEL) && ids.includes(EMB), ids.join(','));
    const m = await openai.models.retrieve(MODEL);
    assert.equal(m.id, MODEL);
    assert.equal(m.object, 'model');
  });
});

describe('openai SDK: chat helpers', () => {
  it('chat.completions.stream: content events, finalChatCompletion equal to the text', async () => {
    let deltas = '';
    const final = await scripted(h, ['Hello from the stream'], async () => {
      const stream = openai.chat.completions.stream({
        model: MODEL,
        messages: user('hi'),
        max_tokens: 30,
        stream_options: { include_usage: true },
      });
      stream.on('content', (d) => (deltas += d));
      return stream.finalChatCompletion();
    });
    assert.equal(final.choices[0]!.message.content, 'Hello from the stream');
    assert.equal(deltas, 'Hello from the stream');
    assert.equal(final.choices[0]!.finish_reason, 'stop');
    assert.ok(final.usage && final.usage.completion_tokens > 0);
  });

  it('chat.completions.stream with a zod response_format: the parsed object', async () => {
    const Out = z.object({ n: z.int().min(1).max(9) });
    const final = await openai.chat.completions.stream({
      model: MODEL,
      messages: user('n?'),
      max_tokens: 40,
      seed: 3,
      temperature: 1,
      response_format: zodResponseFormat(Out, 'out'),
    }).finalChatCompletion();
    const parsed = final.choices[0]!.message.parsed;
    assert.ok(parsed && Out.safeParse(parsed).success, JSON.stringify(final.choices[0]!.message));
  });

  for (const stream of [false, true]) {
    it(`runTools (${stream ? 'streamed' : 'whole'}): the tool runs, its result goes back, the final answer arrives`, async () => {
      const calls: unknown[] = [];
      const runner = await scripted(h, [toolCall('add', { a: 1, b: 2 }), 'It is 3'], async () => {
        const r = openai.chat.completions.runTools({
          model: MODEL,
          messages: user('1+2?'),
          max_tokens: 60,
          stream,
          tools: [{
            type: 'function',
            function: {
              name: 'add',
              description: 'adds',
              parse: JSON.parse,
              parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
              function: (args: { a: number; b: number }) => {
                calls.push(args);
                return String(args.a + args.b);
              },
            },
          }],
        } as never) as unknown as {
          finalContent(): Promise<string | null>;
          allChatCompletions(): unknown[];
          messages: { role: string; content?: unknown }[];
        };
        await r.finalContent();
        return r;
      });
      assert.deepEqual(calls, [{ a: 1, b: 2 }]);
      assert.equal(await runner.finalContent(), 'It is 3');
      const roles = runner.messages.map((m) => m.role);
      assert.deepEqual(roles.slice(-3), ['assistant', 'tool', 'assistant']);
      assert.equal(runner.messages.at(-2)!.content, '3');
    });
  }
});

describe('openai SDK: reasoning_effort', () => {
  it("a thinking model: none/minimal switch the template's thinking off, low..high leave it on; a bad value is a 400", async () => {
    const prompt = async (effort?: OpenAI.ReasoningEffort) =>
      (await openai.chat.completions.create({
        model: MODEL,
        messages: user('hi'),
        max_tokens: 1,
        ...(effort ? { reasoning_effort: effort } : {}),
      })).usage!.prompt_tokens;
    const plain = await prompt();
    // thinking off: the template closes an empty <think></think> block before the answer (more prompt tokens)
    for (const e of ['none', 'minimal'] as const) assert.ok((await prompt(e)) > plain, `${e} adds the empty think block`);
    for (const e of ['low', 'medium', 'high'] as const) assert.equal(await prompt(e), plain, `${e} keeps thinking on`);
    const r = await scripted(
      h,
      ['<think>hmm</think>Yes'],
      () => openai.chat.completions.create({ model: MODEL, messages: user('q'), reasoning_effort: 'high' }),
    );
    assert.equal((r.choices[0]!.message as { reasoning_content?: string }).reasoning_content?.trim(), 'hmm');
    assert.equal(r.choices[0]!.message.content?.trim(), 'Yes');
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages: user('x'), reasoning_effort: 'extreme' as never }),
      OpenAI.BadRequestError,
    );
  });

  it('a model without thinking accepts reasoning_effort and ignores it', async () => {
    const r = await openai.chat.completions.create({
      model: 'tiny-vlm:test',
      messages: user('hi'),
      max_tokens: 1,
      reasoning_effort: 'high',
    });
    assert.equal(r.choices.length, 1);
  });
});

describe('openai SDK: responses helpers', () => {
  it('responses.stream: text delta events and finalResponse; the response is stored', async () => {
    let deltas = '';
    const events: string[] = [];
    const final = await scripted(h, ['Streamed answer'], async () => {
      const stream = openai.responses.stream({ model: MODEL, input: 'say it', max_output_tokens: 20 });
      stream.on('response.output_text.delta', (e) => (deltas += e.delta));
      stream.on('event', (e) => events.push(e.type));
      return stream.finalResponse();
    });
    assert.equal(final.output_text, 'Streamed answer');
    assert.equal(deltas, 'Streamed answer');
    assert.equal(final.status, 'completed');
    assert.equal(events[0], 'response.created');
    assert.equal(events.at(-1), 'response.completed');
    assert.equal((await openai.responses.retrieve(final.id)).output_text, 'Streamed answer');
  });

  it('responses.stream with a function tool: the arguments events and a function_call item', async () => {
    const final = await scripted(h, [toolCall('add', { a: 2, b: 5 })], async () => {
      const stream = openai.responses.stream({
        model: MODEL,
        input: '2+5?',
        max_output_tokens: 60,
        tools: [{
          type: 'function',
          name: 'add',
          strict: false,
          parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
        }],
      });
      return stream.finalResponse();
    });
    const call = final.output.find((o) => o.type === 'function_call');
    assert.ok(call && call.type === 'function_call', JSON.stringify(final.output));
    assert.equal(call.name, 'add');
    assert.deepEqual(JSON.parse(call.arguments), { a: 2, b: 5 });
    // the result goes back as a function_call_output on the chain
    const next = await scripted(h, ['Seven'], () =>
      openai.responses.create({
        model: MODEL,
        previous_response_id: final.id,
        max_output_tokens: 10,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '7' }],
      }));
    assert.equal(next.output_text, 'Seven');
  });

  it('responses.parse with zodTextFormat: output_parsed validates', async () => {
    const Out = z.object({ ok: z.boolean(), n: z.int().min(0).max(5) });
    const r = await openai.responses.parse({
      model: MODEL,
      input: 'answer',
      max_output_tokens: 60,
      temperature: 1,
      text: { format: zodTextFormat(Out, 'out') },
    });
    assert.ok(r.output_parsed && Out.safeParse(r.output_parsed).success, r.output_text);
  });
});

describe('openai SDK: embeddings, files, vector stores', () => {
  it('embeddings with the SDK defaults (it asks for base64 and decodes): unit vectors of the model size', async () => {
    const r = await openai.embeddings.create({ model: EMB, input: ['one', 'two'] });
    assert.equal(r.data.length, 2);
    for (const d of r.data) {
      assert.ok(Array.isArray(d.embedding) && d.embedding.length > 0);
      assert.ok(Math.abs(Math.hypot(...d.embedding) - 1) < 1e-3);
    }
    assert.ok(r.usage.prompt_tokens > 0);
  });

  it('files.create, waitForProcessing, content; vectorStores.create + files.uploadAndPoll + search', async () => {
    const text = 'Harbour code: the lighthouse opens at dawn.\n'.repeat(4);
    const f = await openai.files.create({ file: await toFile(Buffer.from(text), 'notes.txt'), purpose: 'assistants' });
    const done = await openai.files.waitForProcessing(f.id, { pollInterval: 50 });
    assert.ok(['processed', 'uploaded'].includes(done.status), done.status);
    assert.equal(await (await openai.files.content(f.id)).text(), text);

    const vs = await openai.vectorStores.create({ name: 'qa' });
    assert.match(vs.id, /^vs_/);
    const vf = await openai.vectorStores.files.uploadAndPoll(vs.id, await toFile(Buffer.from(text), 'harbour.txt'), {
      pollIntervalMs: 100,
    });
    assert.equal(vf.status, 'completed', JSON.stringify(vf.last_error));
    const listed = [];
    for await (const x of openai.vectorStores.files.list(vs.id)) listed.push(x.id);
    assert.deepEqual(listed, [vf.id]);
    const hits = await openai.vectorStores.search(vs.id, { query: 'lighthouse' });
    assert.ok(hits.data.length > 0);
    assert.equal(hits.data[0]!.file_id, vf.id);
    assert.match(hits.data[0]!.content[0]!.text, /lighthouse/);
    await openai.vectorStores.files.createAndPoll(vs.id, { file_id: f.id }, { pollIntervalMs: 100 });
    assert.equal((await openai.vectorStores.retrieve(vs.id)).file_counts.completed, 2);
    assert.equal((await openai.vectorStores.delete(vs.id)).deleted, true);
    await assert.rejects(openai.vectorStores.retrieve(vs.id), OpenAI.NotFoundError);
  });

  it('files.list: purpose filter, limit with auto-pagination (has_more/after), order', async () => {
    const mine: string[] = [];
    for (const i of [0, 1, 2]) {
      mine.push((await openai.files.create({ file: await toFile(Buffer.from(`batch ${i}`), `p${i}.txt`), purpose: 'batch' })).id);
    }
    const only = await openai.files.list({ purpose: 'batch' });
    assert.deepEqual(only.data.map((f) => f.id), [...mine].reverse());
    const first = await openai.files.list({ purpose: 'batch', limit: 2 });
    assert.equal(first.data.length, 2);
    assert.equal(first.has_more, true);
    const paged: string[] = [];
    for await (const f of openai.files.list({ purpose: 'batch', limit: 1 })) paged.push(f.id);
    assert.deepEqual(paged, [...mine].reverse());
    assert.deepEqual((await openai.files.list({ purpose: 'batch', order: 'asc' })).data.map((f) => f.id), mine);
    await assert.rejects(openai.files.list({ limit: 0 }), OpenAI.BadRequestError);
  });

  it('vectorStores.fileBatches: createAndPoll, retrieve, list, listFiles; cancel of a finished batch leaves it', async () => {
    const ids = [];
    for (const [name, text] of [['b1.txt', 'The red kite nests in the old oak.'], ['b2.txt', 'The blue heron fishes by the mill pond.']]) {
      ids.push((await openai.files.create({ file: await toFile(Buffer.from(text!), name!), purpose: 'assistants' })).id);
    }
    const vs = await openai.vectorStores.create({ name: 'batch' });
    const batch = await openai.vectorStores.fileBatches.createAndPoll(vs.id, { file_ids: ids, attributes: { kind: 'bird' } }, {
      pollIntervalMs: 100,
    });
    assert.match(batch.id, /^vsfb_/);
    assert.equal(batch.status, 'completed');
    assert.deepEqual(batch.file_counts, { in_progress: 0, completed: 2, failed: 0, cancelled: 0, total: 2 });
    assert.equal((await openai.vectorStores.fileBatches.retrieve(batch.id, { vector_store_id: vs.id })).status, 'completed');
    const files = [];
    for await (const f of openai.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: vs.id })) files.push(f);
    assert.deepEqual(files.map((f) => f.id).sort(), [...ids].sort());
    assert.deepEqual(files[0]!.attributes, { kind: 'bird' });
    assert.equal((await openai.vectorStores.fileBatches.cancel(batch.id, { vector_store_id: vs.id })).status, 'completed');
    await assert.rejects(openai.vectorStores.fileBatches.retrieve('vsfb_nope', { vector_store_id: vs.id }), OpenAI.NotFoundError);
    const other = new OpenAI({
      baseURL: `${h.srv.url}/v1`,
      apiKey: await adminKey(h, 'other-batches', openai.apiKey as string),
      maxRetries: 0,
    });
    await assert.rejects(other.vectorStores.fileBatches.retrieve(batch.id, { vector_store_id: vs.id }), OpenAI.NotFoundError);
  });

  it('vector store files: content, attribute update, search filters (comparison and compound), static chunking', async () => {
    const mk = async (name: string, text: string) =>
      (await openai.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'assistants' })).id;
    const a = await mk('a.txt', 'Granite quarry report: the granite cliffs face north.');
    const b = await mk('b.txt', 'Granite kitchen guide: polish granite worktops weekly.');
    const c = await mk('c.txt', 'Granite museum notes: granite statues from Aswan.');
    const vs = await openai.vectorStores.create({ name: 'filters' });
    const chunking = { type: 'static' as const, static: { max_chunk_size_tokens: 200, chunk_overlap_tokens: 50 } };
    const fa = await openai.vectorStores.files.createAndPoll(vs.id, {
      file_id: a,
      attributes: { year: 2021, topic: 'geology' },
      chunking_strategy: chunking,
    }, { pollIntervalMs: 100 });
    assert.deepEqual(fa.chunking_strategy, chunking);
    await openai.vectorStores.files.createAndPoll(vs.id, { file_id: b, attributes: { year: 2023, topic: 'home' } }, {
      pollIntervalMs: 100,
    });
    await openai.vectorStores.files.createAndPoll(vs.id, { file_id: c, attributes: { year: 2024, topic: 'art' } }, { pollIntervalMs: 100 });

    const content = [];
    for await (const part of openai.vectorStores.files.content(a, { vector_store_id: vs.id })) content.push(part);
    assert.deepEqual(content.map((p) => p.type), ['text']);
    assert.match(content[0]!.text!, /granite cliffs face north/);

    // a file stored before attributes rode on its chunks: the first filtered search copies them there
    const db = (h.srv.vectorStores as unknown as { db: Kysely<unknown> }).db;
    await sql`update retrieval_chunks set meta = json_remove(meta, '$.metadata') where doc_id = ${a}`.execute(db);
    const found = async (filters: unknown) =>
      (await openai.vectorStores.search(vs.id, { query: 'granite', filters: filters as never })).data.map((d) => d.file_id).sort();
    assert.deepEqual(await found({ type: 'eq', key: 'topic', value: 'home' }), [b]);
    assert.deepEqual(await found({ type: 'ne', key: 'topic', value: 'home' }), [a, c].sort());
    assert.deepEqual(await found({ type: 'gte', key: 'year', value: 2023 }), [b, c].sort());
    assert.deepEqual(await found({ type: 'lt', key: 'year', value: 2023 }), [a]);
    assert.deepEqual(await found({ type: 'in', key: 'topic', value: ['art', 'geology'] }), [a, c].sort());
    assert.deepEqual(await found({ type: 'nin', key: 'topic', value: ['art', 'geology'] }), [b]);
    assert.deepEqual(
      await found({ type: 'and', filters: [{ type: 'gt', key: 'year', value: 2021 }, { type: 'ne', key: 'topic', value: 'art' }] }),
      [b],
    );
    assert.deepEqual(
      await found({
        type: 'or',
        filters: [{ type: 'eq', key: 'topic', value: 'art' }, { type: 'and', filters: [{ type: 'eq', key: 'year', value: 2021 }] }],
      }),
      [a, c].sort(),
    );
    // a number never equals a string
    assert.deepEqual(await found({ type: 'eq', key: 'year', value: '2021' }), []);
    await assert.rejects(found({ type: 'like', key: 'topic', value: 'x' }), OpenAI.BadRequestError);
    // the file_search tool of Responses takes the same filters
    const fileSearch = (filters: unknown) =>
      openai.responses.create({
        model: MODEL,
        input: 'granite',
        max_output_tokens: 1,
        include: ['file_search_call.results'],
        tools: [{ type: 'file_search', vector_store_ids: [vs.id], filters: filters as never }],
      });
    const call = (await fileSearch({ type: 'eq', key: 'topic', value: 'art' })).output.find((o) => o.type === 'file_search_call');
    assert.deepEqual(call?.type === 'file_search_call' ? call.results?.map((r) => r.file_id) : undefined, [c]);
    await assert.rejects(fileSearch({ type: 'eq', key: 'bad key!', value: 1 }), OpenAI.BadRequestError);

    const updated = await openai.vectorStores.files.update(c, { vector_store_id: vs.id, attributes: { year: 2024, topic: 'home' } });
    assert.deepEqual(updated.attributes, { year: 2024, topic: 'home' });
    assert.deepEqual(await found({ type: 'eq', key: 'topic', value: 'home' }), [b, c].sort());
    assert.deepEqual((await openai.vectorStores.files.retrieve(c, { vector_store_id: vs.id })).attributes, { year: 2024, topic: 'home' });
    await assert.rejects(
      openai.vectorStores.files.create(vs.id, {
        file_id: a,
        chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 200, chunk_overlap_tokens: 150 } },
      }),
      OpenAI.BadRequestError,
    );
  });
});
