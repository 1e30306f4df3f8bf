import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ndjsonResponse } from '../../src/http/ndjson.ts';
import { sseResponse } from '../../src/http/sse.ts';
import { requestIds } from '../../src/http/request-meta.ts';
import type { Hono } from 'hono';
import type { AppEnv } from '../../src/http/context.ts';
import { type InProcess, inProcess, json, listening } from '../support/server.ts';
import { inProcessSuite } from '../support/in-process-suite.ts';

describe('envelopes, node tag, validation', () => {
  let t: InProcess;
  let served: Awaited<ReturnType<typeof listening>>;
  async function* items() {
    yield { a: 1 };
    yield { b: 2 };
  }
  const extraRoutes = (app: Hono<AppEnv>) => {
    app.get('/svc/v1/test/ndjson', (c) => ndjsonResponse(c, items()));
    app.get('/svc/v1/test/sse', (c) => sseResponse(c, items()));
    // an answer not built through the context
    app.get('/svc/v1/test/raw', () => new Response('raw', { headers: { 'content-type': 'text/plain' } }));
  };
  before(async () => {
    t = await inProcess({}, { extraRoutes });
    served = await listening({}, { extraRoutes });
  });
  after(async () => {
    await t.close();
    await served.stop();
  });

  // In process (app.request) the headers are prepared on the context; a real server may set them on its
  // own response instead (Node), which every answer must carry all the same.
  const ways = () => [
    { way: 'in process', request: t.request, nodeTag: t.s.nodeTag, raw: false },
    { way: 'served', request: (path: string, init?: RequestInit) => fetch(served.url + path, init), nodeTag: served.nodeTag, raw: true },
  ];

  test('every response carries X-Svc-Node and X-Request-Id: routes, errors, 404s, static files, streams', async () => {
    const html = { headers: { accept: 'text/html' } };
    const cases: [string, RequestInit?][] = [
      ['/api/version'],
      ['/health'],
      ['/nope'],
      ['/v1/nope'],
      ['/api/nope'],
      ['/svc/v1/nope'],
      ['/'],
      ['/', html],
      ['/playground.html'],
      ['/playground.js'],
      ['/api/version', { method: 'HEAD' }],
      ['/svc/v1/test/ndjson'],
      ['/svc/v1/test/sse'],
      ['/svc/v1/admin/keys', { method: 'POST', body: '{' }],
    ];
    for (const { way, request, nodeTag, raw } of ways()) {
      const ids = new Set<string>();
      for (const [path, init] of raw ? [...cases, ['/svc/v1/test/raw'] as [string]] : cases) {
        const r = await request(path, init);
        const what = `${way}: ${init?.method ?? 'GET'} ${path}`;
        assert.equal(r.headers.get('x-svc-node'), nodeTag, what);
        const id = r.headers.get('x-request-id') ?? '';
        assert.match(id, /^[a-z0-9]{12}$/, what);
        ids.add(id);
        // no origin: no CORS grant, but the answer still says it varies by origin (shared caches)
        assert.equal(r.headers.get('access-control-allow-origin'), null, what);
        assert.equal(r.headers.get('vary'), 'Origin', what);
        await r.arrayBuffer();
      }
      assert.equal(ids.size, cases.length + (raw ? 1 : 0), `${way}: one request id per request`);
      const s = await request('/svc/v1/test/sse');
      assert.match(s.headers.get('content-type') ?? '', /text\/event-stream/);
      assert.match(await s.text(), /data: \{"a":1\}/);
    }
  });

  test('an allowed origin gets its CORS grant on every answer, raw ones included; a foreign one none', async () => {
    for (const { way, request, raw } of ways()) {
      for (const path of ['/api/version', '/api/nope', '/svc/v1/test/sse', ...(raw ? ['/svc/v1/test/raw'] : [])]) {
        const r = await request(path, { headers: { origin: 'http://localhost:5173' } });
        const what = `${way}: ${path}`;
        assert.equal(r.headers.get('access-control-allow-origin'), 'http://localhost:5173', what);
        assert.match(r.headers.get('access-control-expose-headers') ?? '', /(^|,)X-Request-Id(,|$)/, what);
        assert.equal(r.headers.get('vary'), 'Origin', what);
        assert.equal(r.headers.get('access-control-allow-credentials'), null, what);
        await r.arrayBuffer();
        const foreign = await request(path, { headers: { origin: 'https://elsewhere.example' } });
        assert.equal(foreign.headers.get('access-control-allow-origin'), null, what);
        assert.equal(foreign.headers.get('vary'), 'Origin', what);
        await foreign.arrayBuffer();
      }
    }
  });

  test('request ids: 12 characters of [a-z0-9], unique across many thousands, one boot prefix per process', () => {
    const next = requestIds();
    const ids = Array.from({ length: 50_000 }, next);
    for (const id of ids) assert.match(id, /^[a-z0-9]{12}$/);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(new Set(ids.map((id) => id.slice(0, 5))).size, 1);
    assert.notEqual(requestIds()().slice(0, 5), ids[0]!.slice(0, 5), 'another process (generator) has another prefix');
  });

  test('GET /api/version reports the package version as YYYY.M.PATCH', async () => {
    const r = await t.request('/api/version');
    assert.equal(r.status, 200);
    assert.match((await r.json()).version, /^\d{4}\.\d{1,2}\.\d+$/);
  });

  test('unknown routes answer 404 in their family envelope', async () => {
    const a = await t.request('/v1/nope');
    assert.equal(a.status, 404);
    const ab = await a.json();
    assert.equal(typeof ab.error.message, 'string');
    assert.equal(ab.error.type, 'invalid_request_error');
    const b = await t.request('/api/nope');
    assert.equal(b.status, 404);
    const bb = await b.json();
    assert.equal(typeof bb.error, 'string');
    assert.deepEqual(Object.keys(bb), ['error']);
    const n = await t.request('/svc/v1/nope');
    assert.equal(n.status, 404);
    assert.equal(n.headers.get('content-type'), 'application/problem+json');
    const nb = await n.json();
    assert.equal(nb.error, 'not_found');
    assert.equal(nb.status, 404);
    assert.equal(typeof nb.message, 'string');
  });

  test('malformed JSON and failed validation are 400 with field details, never 500', async () => {
    const bad = await t.request('/svc/v1/admin/keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":',
    });
    assert.equal(bad.status, 400);
    const bb = await bad.json();
    assert.equal(bb.error, 'invalid_request');
    assert.ok(Array.isArray(bb.errors) && bb.errors.length > 0);
    const invalid = await t.request('/svc/v1/admin/keys', json({ name: 5, role: 'root' }));
    assert.equal(invalid.status, 400);
    const ib = await invalid.json();
    const fields = ib.errors.map((e: { field: string }) => e.field);
    assert.ok(fields.includes('name'), JSON.stringify(ib));
    assert.ok(fields.includes('role'), JSON.stringify(ib));
  });

  test('a declared body over the upload limit is refused with 413 before it is read', async () => {
    const small = await inProcess({ maxUploadBytes: 1000 });
    try {
      const r = await small.request('/svc/v1/admin/keys', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': '5000' },
        body: 'x'.repeat(5000),
      });
      assert.equal(r.status, 413);
      const b = await r.json();
      assert.match(b.message, /upload the file first/);
    } finally {
      await small.close();
    }
  });
});

describe('API keys', () => {
  let t: InProcess;
  inProcessSuite((x) => (t = x));

  test('no key exists: requests are served for the local owner, as a local Ollama does', async () => {
    assert.equal((await t.request('/svc/v1/nope')).status, 404);
    // A placeholder token that is not ours is ignored while keys are not required.
    assert.equal((await t.request('/v1/nope', { headers: { authorization: 'Bearer sk-anything' } })).status, 404);
  });

  test('keys: created once with a token, stored as a hash, then required in every family', async () => {
    const created = await t.request('/svc/v1/admin/keys', json({ name: 'first' }));
    assert.equal(created.status, 201);
    const admin = await created.json();
    assert.match(admin.token, /^svc_/);
    assert.equal(admin.role, 'admin', 'the first key is an admin key');
    const rows = await t.s.store.db.selectFrom('api_keys').selectAll().execute();
    assert.ok(rows.every((r) => r.token_hash !== admin.token && !JSON.stringify(r).includes(admin.token)), 'the token is not stored');

    // Missing key: 401 in each envelope.
    const a = await t.request('/v1/models');
    assert.equal(a.status, 401);
    assert.equal((await a.json()).error.type, 'authentication_error');
    const b = await t.request('/api/tags');
    assert.equal(b.status, 401);
    assert.equal(typeof (await b.json()).error, 'string');
    const n = await t.request('/svc/v1/jobs/x');
    assert.equal(n.status, 401);
    assert.equal((await n.json()).error, 'unauthorized');
    // Liveness stays open.
    assert.equal((await t.request('/api/version')).status, 200);

    const auth = { authorization: `Bearer ${admin.token}` };
    const list = await t.request('/svc/v1/admin/keys', { headers: auth });
    assert.equal(list.status, 200);
    assert.equal((await list.json()).data.length, 1);
    // x-api-key works on the native family
    assert.equal((await t.request('/svc/v1/admin/keys', { headers: { 'x-api-key': admin.token } })).status, 200);

    // A user key cannot use admin routes.
    const user = await (await t.request('/svc/v1/admin/keys', json({ name: 'u', role: 'user' }, auth))).json();
    assert.equal(user.role, 'user');
    assert.equal((await t.request('/svc/v1/admin/keys', { headers: { authorization: `Bearer ${user.token}` } })).status, 403);

    // Unknown and revoked tokens: always 401.
    assert.equal((await t.request('/svc/v1/jobs/x', { headers: { authorization: 'Bearer svc_nope' } })).status, 401);
    assert.equal((await t.request('/v1/models', { headers: { authorization: 'Bearer sk-placeholder' } })).status, 401);
    const revoked = await t.request(`/svc/v1/admin/keys/${user.id}`, { method: 'DELETE', headers: auth });
    assert.equal(revoked.status, 200);
    const after = await t.request('/api/tags', { headers: { authorization: `Bearer ${user.token}` } });
    assert.equal(after.status, 401);
    assert.equal(typeof (await after.json()).error, 'string');
  });

  test('revoking every key does not make a revoked token anonymous', async () => {
    const t2 = await inProcess();
    try {
      const k = await (await t2.request('/svc/v1/admin/keys', json({ name: 'only' }))).json();
      await t2.request(`/svc/v1/admin/keys/${k.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${k.token}` } });
      assert.equal((await t2.request('/svc/v1/nope', { headers: { authorization: `Bearer ${k.token}` } })).status, 401);
      assert.equal((await t2.request('/svc/v1/nope')).status, 404, 'no active key: anonymous again');
    } finally {
      await t2.close();
    }
  });

  test('require-keys makes a key necessary even before one exists', async () => {
    const t3 = await inProcess({ requireKeys: true });
    try {
      assert.equal((await t3.request('/v1/models')).status, 401);
    } finally {
      await t3.close();
    }
  });
});
