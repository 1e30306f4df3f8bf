/**
 * CORS as browser clients meet it: a preflight from a page on this machine is answered before the key
 * check, with the origin echoed and no credentials; a foreign origin gets no CORS headers, so the browser
 * refuses to hand the answer to its page. Origins are judged against the setting's patterns.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { originAllowed } from '../../src/http/cors.ts';
import { type InProcess, inProcess } from '../support/server.ts';

let srv: InProcess;
before(async () => {
  srv = await inProcess({ requireKeys: true });
});
after(() => srv.close());

const preflight = (origin: string) =>
  srv.request('/v1/chat/completions', {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });

describe('CORS', () => {
  it('a preflight from localhost on any port is allowed before the key check, without credentials', async () => {
    const r = await preflight('http://localhost:5173');
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://localhost:5173');
    assert.match(r.headers.get('access-control-allow-headers') ?? '', /authorization/i);
    assert.match(r.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.equal(r.headers.get('access-control-allow-credentials'), null);
    assert.ok(r.headers.get('x-svc-node'));
  });

  it('a foreign origin gets no CORS headers; the request itself still needs a key', async () => {
    const r = await preflight('https://evil.example');
    assert.equal(r.headers.get('access-control-allow-origin'), null);
    const get = await srv.request('/v1/models', { headers: { origin: 'https://evil.example' } });
    assert.equal(get.status, 401);
    assert.equal(get.headers.get('access-control-allow-origin'), null);
  });

  it('an allowed origin sees the answer and the exposed headers, errors included', async () => {
    const r = await srv.request('/v1/models', { headers: { origin: 'http://127.0.0.1:3000' } });
    assert.equal(r.status, 401);
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://127.0.0.1:3000');
    assert.match(r.headers.get('access-control-expose-headers') ?? '', /X-Svc-Node/i);
  });

  it('origin patterns: host without port, scheme wildcards, *', () => {
    const d = ['http://localhost', 'app://*'];
    assert.ok(originAllowed('http://localhost:8080', d));
    assert.ok(!originAllowed('https://localhost:8080', d));
    assert.ok(!originAllowed('http://localhost.evil.example', d));
    assert.ok(originAllowed('app://anything', d));
    assert.ok(!originAllowed('null', d));
    assert.ok(originAllowed('https://a.example', ['*']));
    assert.ok(originAllowed('http://h:81', ['http://h:81']));
    assert.ok(!originAllowed('http://h:82', ['http://h:81']));
  });
});
