/**
 * Server tools, memory and the MCP client in /v1/chat/completions, judged with the official `openai`
 * client against the tiny fixture model, steered by a logits processor: the model's tool call is real
 * output parsed by the server, the tool runs for real (a vector store search through its route under the
 * caller's key, a fetch through the egress policy, a tool of an external MCP server started here with the
 * official SDK), and the next step's prompt (decoded from the ids the processor sees) carries the result.
 */
import assert from 'node:assert/strict';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { FIXTURE_MODELS_DIR, LONG_LLAMA } from '../../support/hub-stand-in.ts';
import { forceTokens, type Harness, startHarness, tinyLlamaIds } from '../ollama/harness.ts';

/** tiny-llama declaring a longer context: tool definitions and results do not fit in the fixture's 512 positions. */
const MODEL = LONG_LLAMA.name;
const EMB = 'tiny-bert-embed:test';
let h: Harness;
let keyA: string;
let keyB: string;
let a: OpenAI;
let b: OpenAI;
let mcp: HttpServer;
let page: HttpServer;
let pageUrl: string;
let decode: (ids: bigint[]) => string;
const mcpCalls: unknown[] = [];

/** An MCP server (official SDK, stateless Streamable HTTP) with one tool. */
function startMcp(): Promise<string> {
  mcp = createServer(async (req, res) => {
    const server = new Server({ name: 'geo', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{
        name: 'capital',
        description: 'The capital city of a country',
        inputSchema: { type: 'object', properties: { country: { type: 'string' } }, required: ['country'] },
      }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (r) => {
      mcpCalls.push(r.params.arguments);
      const country = String(r.params.arguments?.country ?? '');
      if (country !== 'Freedonia') return { isError: true, content: [{ type: 'text', text: `no capital known for ${country}` }] };
      return { content: [{ type: 'text', text: 'The capital of Freedonia is Zlotograd.' }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  return new Promise((resolve) => mcp.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`)));
}

before(async () => {
  const mcpUrl = await startMcp();
  page = createServer((req, res) => {
    if (req.url === '/away') {
      res.writeHead(302, { location: 'http://forbidden.example/' }).end();
      return;
    }
    if (req.url === '/html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
        '<html><head><script>var x=1;</script></head><body><h1>Reading room</h1><p>Opens at <b>07:45</b>.</p></body></html>',
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('Opening hours: the reading room opens at 07:45.');
  });
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', () => r()));
  pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  h = await startHarness({ defaultEmbeddingModel: EMB, toolAllowedHosts: ['127.0.0.1'], mcpServers: [`geo=${mcpUrl}`] });
  keyA = (await h.srv.keys.create({ name: 'a', role: 'user' })).token;
  keyB = (await h.srv.keys.create({ name: 'b', role: 'user' })).token;
  a = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: keyA, maxRetries: 0 });
  b = new OpenAI({ baseURL: `${h.srv.url}/v1`, apiKey: keyB, maxRetries: 0 });
  const rt = await initBackend('cpu');
  const tok = await rt.tf.AutoTokenizer.from_pretrained(`${FIXTURE_MODELS_DIR}/tiny-llama`);
  decode = (ids) => tok.decode(ids.map(Number), { skip_special_tokens: false } as never) as string;
});
after(async () => {
  h?.steer(undefined);
  await h?.close();
  mcp?.close();
  page?.close();
});

/** Steers generation n of the turn to say script[n]; records the prompt each generation saw. */
async function script(texts: string[]) {
  const ids = await Promise.all(texts.map((t) => tinyLlamaIds(t)));
  const prompts: string[] = [];
  let n = 0;
  h.steer(() => {
    const i = Math.min(n++, ids.length - 1);
    const force = forceTokens(ids[i]!);
    let first = true;
    return [(seq: bigint[][], logits: { data: Float32Array }) => {
      if (first) prompts.push(decode(seq[0]!));
      first = false;
      return (force as (s: bigint[][], l: { data: Float32Array }) => unknown)(seq, logits);
    }];
  });
  return prompts;
}
/** A chat completion of one user message with server tools (svc's extension fields, untyped in the SDK). */
const askWithTools = (client: OpenAI, content: string, serverTools: unknown[]) =>
  client.chat.completions.create(
    { model: MODEL, messages: [{ role: 'user', content }], max_tokens: 200, server_tools: serverTools } as never,
  );
/** A chat completion of one user message with memory store `store` (20 tokens unless `extra` says otherwise). */
const askWithMemory = (client: OpenAI, content: string, store: string, extra: Record<string, unknown> = {}) =>
  client.chat.completions.create(
    { model: MODEL, max_tokens: 20, memory_store: store, messages: [{ role: 'user', content }], ...extra } as never,
  );
/** `fn` run with the turn scripted (see script), given the prompts; unsteered after. */
async function scripted(texts: string[], fn: (prompts: string[]) => Promise<void>) {
  const prompts = await script(texts);
  try {
    await fn(prompts);
  } finally {
    h.steer(undefined);
  }
}
const call = (name: string, args: unknown) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
type Ext = {
  server_tool_calls?: {
    name: string;
    status: string;
    arguments: Record<string, unknown>;
    output?: any;
    error?: { status: number; reason: string; message: string };
  }[];
  memory?: { store: string; recalled: { id: string; text: string }[]; written: { id: string; text: string }[] };
};
const ext = (r: unknown) => r as Ext;

describe('server tools', () => {
  let storeId: string;
  before(async () => {
    const f = await a.files.create({
      file: await toFile(Buffer.from('Harbour notes.\n\nThe harbour pilot on duty this week is Captain Ilse Marwick.\n'), 'harbour.txt'),
      purpose: 'assistants',
    });
    storeId = (await a.vectorStores.create({ name: 'harbour', file_ids: [f.id] })).id;
    await h.srv.vectorStores.settle();
  });

  it('searches a vector store, feeds the result back, and answers citing it; the calls are listed', async () => {
    const answer = 'The pilot is Captain Ilse Marwick (harbour.txt).';
    await scripted([
      call('vector_store_search', { vector_store_id: storeId, query: 'harbour pilot', max_num_results: 1 }),
      answer,
    ], async (prompts) => {
      const r = await askWithTools(a, 'Who is the pilot?', ['vector_store_search']);
      assert.equal(r.choices[0].message.content, answer);
      assert.equal(r.choices[0].finish_reason, 'stop');
      const calls = ext(r).server_tool_calls!;
      assert.equal(calls.length, 1);
      assert.equal(calls[0].name, 'vector_store_search');
      assert.equal(calls[0].status, 'completed');
      assert.deepEqual(calls[0].arguments, { vector_store_id: storeId, query: 'harbour pilot', max_num_results: 1 });
      assert.equal(calls[0].output[0].filename, 'harbour.txt');
      assert.match(calls[0].output[0].text, /Captain Ilse Marwick/);
      assert.equal(prompts.length, 2, 'two generations: the call, then the answer');
      assert.doesNotMatch(prompts[0]!, /Ilse Marwick/);
      assert.match(prompts[1]!, /Captain Ilse Marwick/, 'the search result is in the second prompt');
      assert.ok(r.usage!.prompt_tokens > 0 && r.usage!.total_tokens === r.usage!.prompt_tokens + r.usage!.completion_tokens);
    });
  });

  it("bound arguments: fixed by the request, hidden from the model, and they win over the model's", async () => {
    await scripted([
      call('vector_store_search', { query: 'harbour pilot', vector_store_id: 'vs_elsewhere' }),
      'Ilse Marwick.',
    ], async (prompts) => {
      const r = await askWithTools(a, 'Who is the pilot?', [{ name: 'vector_store_search', vector_store_id: storeId, max_num_results: 1 }]);
      const c = ext(r).server_tool_calls![0]!;
      assert.equal(c.status, 'completed', JSON.stringify(c.error));
      assert.match(c.output[0].text, /Captain Ilse Marwick/);
      assert.deepEqual(c.arguments, { query: 'harbour pilot', vector_store_id: storeId, max_num_results: 1 }, 'the arguments that ran');
      assert.doesNotMatch(prompts[0]!, /vector_store_id|max_num_results/, 'bound arguments are not offered to the model');
      assert.match(prompts[0]!, /vector_store_search/);
    });
    await assert.rejects(
      a.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'x' }], server_tools: [{ name: 'fetch_url', nope: 1 }] } as never,
      ),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /"nope" is not an argument of fetch_url/.test(e.message),
    );
  });

  it("the same tools over our MCP server: vector_store_search lists and runs under the caller's key", async () => {
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.srv.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keyA}` } } }),
    );
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      for (const n of ['vector_store_search', 'summarize', 'translate', 'extract', 'transcribe', 'image_convert']) {
        assert.ok(names.includes(n), n);
      }
      const r = await client.callTool({
        name: 'vector_store_search',
        arguments: { vector_store_id: storeId, query: 'harbour pilot', max_num_results: 1 },
      });
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      assert.match(JSON.stringify(r.structuredContent ?? r.content), /Captain Ilse Marwick/);
    } finally {
      await client.close();
    }
  });

  it("runs under the caller's key: another key's search fails with 404, fed back as an error", async () => {
    await scripted([
      call('vector_store_search', { vector_store_id: storeId, query: 'harbour pilot' }),
      'I could not search it.',
    ], async (prompts) => {
      const r = await askWithTools(b, 'Who is the pilot?', ['vector_store_search']);
      const c = ext(r).server_tool_calls![0]!;
      assert.equal(c.status, 'failed');
      assert.equal(c.error!.status, 404);
      assert.match(prompts[1]!, /not_found|not found/);
      assert.doesNotMatch(prompts[1]!, /Ilse Marwick/);
      assert.equal(r.choices[0].message.content, 'I could not search it.');
    });
  });

  it('a client tool call ends the turn and is returned to the client as usual', async () => {
    await scripted([call('lookup', { q: 'x' })], async () => {
      const r = await a.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'look it up' }],
        max_tokens: 200,
        server_tools: ['vector_store_search'],
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
      } as never);
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      assert.equal(
        r.choices[0].message.tool_calls![0]!.type === 'function' && r.choices[0].message.tool_calls![0]!.function.name,
        'lookup',
      );
      assert.deepEqual(ext(r).server_tool_calls, []);
    });
  });

  it('the step limit ends the loop: the last generation has no server tools', async () => {
    await scripted([call('fetch_url', { url: `${pageUrl}/a` }), call('fetch_url', { url: `${pageUrl}/b` })], async (prompts) => {
      const r = await a.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'hours?' }],
        max_tokens: 200,
        server_tools: ['fetch_url'],
        step_limit: 1,
        tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
      } as never);
      const calls = ext(r).server_tool_calls!;
      assert.deepEqual(calls.map((c) => [c.status, c.arguments.url]), [['completed', `${pageUrl}/a`], ['skipped', `${pageUrl}/b`]]);
      assert.equal(calls[1]!.error!.reason, 'step_limit_reached');
      assert.equal(r.choices[0].message.tool_calls, undefined, 'a server call past the limit is not sent to the client');
      assert.equal(r.choices[0].finish_reason, 'stop');
      assert.equal(prompts.length, 2);
      assert.match(prompts[0]!, /fetch_url/, 'the first prompt offers the tool');
      assert.doesNotMatch(prompts[1]!.split('<|im_start|>user')[0]!, /"fetch_url"/, 'the last prompt does not offer it');
      assert.match(prompts[1]!.split('<|im_start|>user')[0]!, /"lookup"/, 'the client tool stays offered');
      assert.match(prompts[1]!, /07:45/);
    });
  });

  it('fetch_url gives HTML as Markdown', async () => {
    await scripted([call('fetch_url', { url: `${pageUrl}/html` }), 'At 07:45.'], async () => {
      const r = await askWithTools(a, 'hours?', ['fetch_url']);
      const out = ext(r).server_tool_calls![0]!.output;
      assert.equal(out.format, 'markdown');
      assert.match(out.text, /^# Reading room/m);
      assert.match(out.text, /Opens at \*\*07:45\*\*/);
      assert.doesNotMatch(out.text, /<p>|var x/);
    });
  });

  it('fetch_url goes through the egress policy: a redirect to a host outside it fails', async () => {
    await scripted([call('fetch_url', { url: `${pageUrl}/away` }), 'No.'], async () => {
      const r = await askWithTools(a, 'hours?', ['fetch_url']);
      const c = ext(r).server_tool_calls![0]!;
      assert.equal(c.status, 'failed');
      assert.equal(c.error!.reason, 'egress_denied');
      assert.match(c.error!.message, /forbidden\.example/);
    });
  });

  it('unknown server tools and bad step limits are 400s naming them', async () => {
    await assert.rejects(
      a.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], server_tools: ['nope'] } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /unknown server tool "nope"/.test(e.message),
    );
    await assert.rejects(
      a.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], server_tools: ['mcp:other'] } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /unknown MCP server "other"/.test(e.message),
    );
    await assert.rejects(
      a.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'x' }], server_tools: ['fetch_url'], step_limit: 0 } as never,
      ),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /step_limit/.test(e.message),
    );
  });
});

describe('MCP client', () => {
  it('an agent uses a tool of an external MCP server registered by the operator', async () => {
    const put = await fetch(`${h.srv.url}/svc/v1/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'geographer', model: MODEL, server_tools: ['mcp:geo'], max_tokens: 200, step_limit: 2 }),
    });
    assert.equal(put.status, 201);
    await scripted([call('geo__capital', { country: 'Freedonia' }), 'Zlotograd.'], async (prompts) => {
      const r = await a.chat.completions.create(
        { agent: 'geographer', messages: [{ role: 'user', content: 'Capital of Freedonia?' }] } as never,
      );
      const c = ext(r).server_tool_calls![0]!;
      assert.equal(c.name, 'geo__capital');
      assert.equal(c.status, 'completed');
      assert.equal(c.output, 'The capital of Freedonia is Zlotograd.');
      assert.deepEqual(mcpCalls.at(-1), { country: 'Freedonia' });
      assert.match(prompts[0]!, /The capital city of a country/, 'the MCP tool is offered with its description');
      assert.match(prompts[1]!, /The capital of Freedonia is Zlotograd\./);
      assert.equal(r.choices[0].message.content, 'Zlotograd.');
    });
  });

  it('an MCP tool error is fed back as a failed call', async () => {
    await scripted([call('geo__capital', { country: 'Atlantis' }), 'Unknown.'], async () => {
      const r = await a.chat.completions.create(
        { agent: 'geographer', messages: [{ role: 'user', content: 'Capital of Atlantis?' }] } as never,
      );
      const c = ext(r).server_tool_calls![0]!;
      assert.equal(c.status, 'failed');
      assert.match(c.error!.message, /no capital known for Atlantis/);
    });
  });
});

describe('memory', () => {
  const req = (key: string, method: string, path: string, body?: unknown) =>
    fetch(`${h.srv.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('facts stated by the user are written back, recalled by meaning in a later request, private to the key', async () => {
    assert.equal((await req(keyA, 'POST', '/svc/v1/memory-stores', { name: 'prefs' })).status, 201);
    assert.equal((await req(keyB, 'POST', '/svc/v1/memory-stores', { name: 'prefs' })).status, 201);
    assert.equal((await req(keyA, 'POST', '/svc/v1/memory-stores', { name: 'prefs' })).status, 409);

    await script(['Noted.']);
    const first = await askWithMemory(a, 'My favourite colour is teal. I live in Lisbon. Can you suggest a paint?', 'prefs', {
      memory: true,
    });
    const m1 = ext(first).memory!;
    assert.deepEqual(m1.written.map((f) => f.text), ['My favourite colour is teal.', 'I live in Lisbon.']);
    assert.deepEqual(m1.recalled, []);
    const listed = (await (await req(keyA, 'GET', '/svc/v1/memory-stores/prefs/facts')).json()) as {
      data: { id: string; text: string; source: string }[];
    };
    assert.deepEqual(listed.data.map((f) => [f.text, f.source]), [['My favourite colour is teal.', 'user'], ['I live in Lisbon.', 'user']]);

    const prompts = await script(['Teal.']);
    const second = await askWithMemory(a, 'Which colour should the kitchen be?', 'prefs');
    const m2 = ext(second).memory!;
    assert.ok(m2.recalled.some((f) => f.text === 'My favourite colour is teal.'), JSON.stringify(m2.recalled));
    assert.match(prompts[0]!, /Facts remembered about the user:[\s\S]*My favourite colour is teal\./);
    assert.deepEqual(m2.written, [], 'a question states no fact');
    // no word in common with the facts: found by the embedding side of the hybrid search only
    const byMeaning = await askWithMemory(a, 'Which hue suits a kitchen', 'prefs', { max_tokens: 5 });
    assert.ok(ext(byMeaning).memory!.recalled.length > 0, 'recalled through the vectors');

    // key B's store of the same name is another store
    const pb = await script(['Hm.']);
    const other = await askWithMemory(b, 'Which colour should the kitchen be?', 'prefs');
    assert.deepEqual(ext(other).memory!.recalled, []);
    assert.doesNotMatch(pb[0]!, /teal/);
    assert.deepEqual(((await (await req(keyB, 'GET', '/svc/v1/memory-stores/prefs/facts')).json()) as { data: unknown[] }).data, []);
    assert.equal((await req(keyB, 'DELETE', `/svc/v1/memory-stores/prefs/facts/${listed.data[0]!.id}`)).status, 404);
    h.steer(undefined);
  });

  it('extract "model": the chat model lists the facts in a constrained extraction call', async () => {
    assert.equal((await req(keyA, 'POST', '/svc/v1/memory-stores', { name: 'bees' })).status, 201);
    await scripted(['How lovely.', '{"facts":["The user keeps bees on a rooftop."]}'], async (prompts) => {
      const r = await askWithMemory(a, 'We have hives on our roof, three of them.', 'bees', { memory: { extract: 'model' } });
      assert.equal(r.choices[0].message.content, 'How lovely.');
      assert.deepEqual(ext(r).memory!.written.map((f) => f.text), ['The user keeps bees on a rooftop.']);
      assert.equal(prompts.length, 2);
      assert.match(prompts[1]!, /List the facts the user states[\s\S]*We have hives on our roof/);
      const facts = (await (await req(keyA, 'GET', '/svc/v1/memory-stores/bees/facts')).json()) as {
        data: { text: string; source: string }[];
      };
      assert.deepEqual(facts.data.map((f) => [f.text, f.source]), [['The user keeps bees on a rooftop.', 'model']]);
    });
    await assert.rejects(
      a.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: 'x' }], memory_store: 'bees', memory: { extract: 'magic' } } as never,
      ),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /memory\.extract/.test(e.message),
    );
  });

  it('facts are deletable; a deleted fact is not recalled; unknown stores are 400 in chat', async () => {
    const listed = (await (await req(keyA, 'GET', '/svc/v1/memory-stores/prefs/facts')).json()) as { data: { id: string; text: string }[] };
    const teal = listed.data.find((f) => /teal/.test(f.text))!;
    assert.equal((await req(keyA, 'DELETE', `/svc/v1/memory-stores/prefs/facts/${teal.id}`)).status, 200);
    await script(['Ok.']);
    const r = await askWithMemory(a, 'Which colour should the kitchen be?', 'prefs', { max_tokens: 5 });
    assert.ok(!ext(r).memory!.recalled.some((f) => /teal/.test(f.text)));
    h.steer(undefined);
    await assert.rejects(
      a.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], memory_store: 'nope' } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /unknown memory store "nope"/.test(e.message),
    );
    await assert.rejects(
      a.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], memory: true } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /memory_store/.test(e.message),
    );
    assert.equal((await req(keyA, 'DELETE', '/svc/v1/memory-stores/prefs')).status, 200);
    assert.equal((await req(keyA, 'GET', '/svc/v1/memory-stores/prefs')).status, 404);
  });
});

describe('agent in /v1/responses', () => {
  it('applies the agent: the same answer as the request it stands for; unknown agents and chat-only agents are 400', async () => {
    h.steer(undefined);
    const put = await fetch(`${h.srv.url}/svc/v1/agents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keyA}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'terse', model: MODEL, instructions: 'Answer in one word.', max_tokens: 6, temperature: 0 }),
    });
    assert.equal(put.status, 201);
    const viaAgent = await a.responses.create({ agent: 'terse', input: 'hello there', instructions: 'Be polite.' } as never);
    const plain = await a.responses.create({
      model: MODEL,
      input: 'hello there',
      instructions: 'Answer in one word.\n\nBe polite.',
      max_output_tokens: 6,
      temperature: 0,
    });
    assert.equal(viaAgent.model, MODEL);
    assert.equal(viaAgent.instructions, plain.instructions);
    assert.equal(viaAgent.max_output_tokens, 6);
    assert.equal(viaAgent.output_text, plain.output_text);
    assert.equal(viaAgent.usage!.input_tokens, plain.usage!.input_tokens);
    await assert.rejects(
      a.responses.create({ agent: 'nope', input: 'x' } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /unknown agent "nope"/.test(e.message),
    );
    await assert.rejects(
      b.responses.create({ agent: 'terse', input: 'x' } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /unknown agent "terse"/.test(e.message),
    );
    await assert.rejects(
      a.responses.create({ agent: 'geographer', input: 'x' } as never),
      (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && /server_tools/.test(e.message),
    );
  });
});

describe('streaming with server tools', () => {
  it('the finished turn arrives as chunks; the last choice chunk carries server_tool_calls', async () => {
    await scripted([call('fetch_url', { url: `${pageUrl}/hours` }), 'At 07:45.'], async () => {
      const stream = await a.chat.completions.create(
        {
          model: MODEL,
          messages: [{ role: 'user', content: 'hours?' }],
          max_tokens: 200,
          server_tools: ['fetch_url'],
          stream: true,
          stream_options: { include_usage: true },
        } as never,
      ) as unknown as AsyncIterable<Record<string, any>>;
      const chunks: Record<string, any>[] = [];
      for await (const c of stream) chunks.push(c);
      assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'At 07:45.');
      const fin = chunks.at(-2)!;
      assert.equal(fin.choices[0].finish_reason, 'stop');
      assert.equal(fin.server_tool_calls[0].name, 'fetch_url');
      assert.match(fin.server_tool_calls[0].output.text, /07:45/);
      assert.equal(fin.server_tool_calls[0].output.format, 'text');
      assert.ok(chunks.at(-1)!.usage.total_tokens > 0);
    });
  });
});
