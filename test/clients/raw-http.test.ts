/**
 * curl-style raw HTTP and the MCP client SDK against one listening server. The curl forms are the ones
 * the peers' own docs print: `curl URL -d '{...}'` sends `application/x-www-form-urlencoded` with a JSON body
 * (Ollama's README), `-H "Content-Type: application/json"` for /v1, `-N` streaming; malformed JSON is a 400
 * in each family's envelope, never a 500. MCP: tools over Streamable
 * HTTP with a key, an unknown tool is a JSON-RPC error, no key is refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type Harness, scripted, serverWithKey } from './steer.ts';

let h: Harness;
let token = '';
const MODEL = 'tiny-llama:test';
const EMB = 'tiny-bert-embed:test';

serverWithKey('raw', (s, key) => {
  h = s;
  token = key;
});

/** What `curl URL -d BODY [-H ...]` sends. */
const curl = (path: string, body?: string, headers: Record<string, string> = {}) =>
  fetch(`${h.srv.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      accept: '*/*',
      'user-agent': 'curl/8.5.0',
      ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      ...headers,
    },
    body,
  });

describe('curl', () => {
  it("Ollama README: curl /api/generate -d '{...}' (form content type, JSON body) streams NDJSON", async () => {
    const res = await scripted(
      h,
      ['Why not'],
      () => curl('/api/generate', JSON.stringify({ model: MODEL, prompt: 'Why is the sky blue?' })),
    );
    assert.equal(res.status, 200, await res.clone().text());
    const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.map((l) => l.response).join(''), 'Why not');
    assert.equal(lines.at(-1).done, true);
    const chat = await curl(
      '/api/chat',
      JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: false, options: { num_predict: 2 } }),
    );
    assert.equal(chat.status, 200);
    const emb = await curl('/api/embed', JSON.stringify({ model: EMB, input: 'hi' }));
    assert.equal(emb.status, 200);
  });

  it('OpenAI docs: curl -H "Content-Type: application/json" /v1/chat/completions, and -N streaming SSE', async () => {
    const body = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    const res = await curl('/v1/chat/completions', body, { 'content-type': 'application/json' });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { object: string }).object, 'chat.completion');
    const sse = await curl(
      '/v1/chat/completions',
      JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3, stream: true }),
      { 'content-type': 'application/json' },
    );
    assert.match(sse.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.match(await sse.text(), /data: \[DONE\]\n\n$/);
    // without a content type (curl -d defaults to a form) the JSON body is still read
    const form = await curl('/v1/chat/completions', body);
    assert.equal(form.status, 200, await form.clone().text());
    const embed = await curl('/v1/embeddings', JSON.stringify({ model: EMB, input: 'x' }));
    assert.equal(embed.status, 200, await embed.clone().text());
  });

  it('malformed JSON is a 400 in the family envelope on /v1, /api, /v1/messages and /svc/v1', async () => {
    const a = await curl('/v1/chat/completions', '{"model":', { 'content-type': 'application/json' });
    assert.equal(a.status, 400);
    assert.equal(typeof ((await a.json()) as { error: { message: string } }).error.message, 'string');
    const b = await curl('/api/chat', '{"model":');
    assert.equal(b.status, 400);
    assert.equal(typeof ((await b.json()) as { error: string }).error, 'string');
    const c = await curl('/v1/messages', '{"model":', { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' });
    assert.equal(c.status, 400);
    assert.equal(((await c.json()) as { type: string }).type, 'error');
    const d = await curl('/svc/v1/summarize', '{"text":', { 'content-type': 'application/json' });
    assert.equal(d.status, 400);
  });

  it('open routes and auth: /health, /api/version without a key; 401 with WWW-Authenticate otherwise', async () => {
    assert.equal((await fetch(`${h.srv.url}/health`)).status, 200);
    assert.equal((await fetch(`${h.srv.url}/api/version`)).status, 200);
    for (const p of ['/v1/models', '/api/tags', '/svc/v1/jobs/x']) {
      const r = await fetch(`${h.srv.url}${p}`);
      assert.equal(r.status, 401, p);
      assert.match(r.headers.get('www-authenticate') ?? '', /Bearer/);
    }
  });
});

describe('MCP client SDK', () => {
  const connect = async (key?: string) => {
    const client = new Client({ name: 'qa', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.srv.url}/mcp`), {
        requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} },
      }),
    );
    return client;
  };

  it('lists tools, calls embeddings and chat; an unknown tool is a JSON-RPC error; no key is refused', async () => {
    const client = await connect(token);
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'chat') && tools.some((t) => t.name === 'embeddings'));
      const emb = await client.callTool({ name: 'embeddings', arguments: { model: EMB, input: 'hello' } });
      assert.notEqual(emb.isError, true, JSON.stringify(emb));
      const chat = await scripted(
        h,
        ['From MCP'],
        () => client.callTool({ name: 'chat', arguments: { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 } }),
      );
      assert.notEqual(chat.isError, true, JSON.stringify(chat));
      assert.match(JSON.stringify(chat.content), /From MCP/);
      await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (e: { code?: number }) => e.code === -32602);
      const bad = await client.callTool({
        name: 'chat',
        arguments: { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] },
      });
      assert.equal(bad.isError, true);
      assert.match(JSON.stringify(bad.content), /404/);
    } finally {
      await client.close();
    }
    await assert.rejects(connect(), /401|Unauthorized/i);
  });
});
