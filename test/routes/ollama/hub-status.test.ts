/**
 * Hub failures as clients see them over HTTP (docs/models.md): an unreachable hub is an upstream outage
 * (503 with Retry-After, in both dialects), a redirect the egress policy forbids is 403 egress_denied, and
 * corrupt bytes from the hub are 502 digest_mismatch: never a 500.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import OpenAI from 'openai';
import { listening } from '../../support/server.ts';
import { FIXTURE_CATALOG, startFixtureHub } from '../../support/hub-stand-in.ts';

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

/** A loopback port with nothing listening on it. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('hub failures', () => {
  it('unreachable hub: 503 hub_unavailable with Retry-After on /api/pull and /v1/chat/completions', async () => {
    const srv = await listening({ hubUrl: `http://127.0.0.1:${await deadPort()}`, hubAllowedHosts: ['127.0.0.1'], backend: 'cpu' });
    closers.push(() => srv.stop());
    for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
    const pull = await fetch(`${srv.url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'tiny-llama', stream: false }) });
    assert.equal(pull.status, 503);
    assert.ok(Number(pull.headers.get('retry-after')) > 0);
    assert.match((await pull.json()).error, /unreachable/);
    const openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await assert.rejects(
      openai.chat.completions.create({ model: 'tiny-llama', messages: [{ role: 'user', content: 'x' }] }),
      (e: unknown) =>
        e instanceof OpenAI.APIError && e.status === 503 && (e.error as { code?: string }).code === 'hub_unavailable' &&
        Number(e.headers?.get('retry-after')) > 0,
    );
  });

  it('a redirect outside the egress policy is 403 egress_denied; corrupt bytes are 502 digest_mismatch', async () => {
    const hub = await startFixtureHub();
    closers.push(() => hub.close());
    const srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'], backend: 'cpu' });
    closers.push(() => srv.stop());
    for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
    const pull = (model: string) => fetch(`${srv.url}/api/pull`, { method: 'POST', body: JSON.stringify({ model, stream: false }) });
    hub.redirect(
      'svc-test/tiny-llama',
      'config.json',
      `${hub.url.replace('127.0.0.1', 'localhost')}/svc-test/tiny-llama/resolve/main/config.json`,
    );
    const denied = await pull('tiny-llama');
    assert.equal(denied.status, 403);
    assert.match((await denied.json()).error, /egress policy/);
    hub.redirect('svc-test/tiny-bert-embed', 'config.json', `${hub.url}/svc-test/tiny-bert-embed/resolve/main/tokenizer.json`);
    const corrupt = await pull('tiny-bert-embed');
    assert.equal(corrupt.status, 502);
    assert.match((await corrupt.json()).error, /does not match/);
  });
});
