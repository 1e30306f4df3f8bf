import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type InProcess, json } from '../support/server.ts';
import { inProcessSuite } from '../support/in-process-suite.ts';

describe('API key last use', () => {
  let t: InProcess;
  inProcessSuite((x) => (t = x));

  const lastUsed = async (id: string) =>
    (await t.s.store.db.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow()).last_used_at;

  test('a request with a key records last_used_at, at most once a minute', async () => {
    const key = await (await t.request('/svc/v1/admin/keys', json({ name: 'k' }))).json();
    assert.equal(key.last_used_at, null);
    assert.equal(await lastUsed(key.id), null);

    const before = Date.now();
    const auth = { authorization: `Bearer ${key.token}` };
    assert.equal((await t.request('/api/tags', { headers: auth })).status, 200);
    const first = Number(await lastUsed(key.id));
    assert.ok(first >= before && first <= Date.now(), `last_used_at ${first} is the time of the request`);

    // Later requests within the minute, through the token cache and past it, do not write again.
    await new Promise((r) => setTimeout(r, 2100));
    assert.equal((await t.request('/v1/models', { headers: auth })).status, 200);
    assert.equal((await t.request('/svc/v1/admin/keys', { headers: auth })).status, 200);
    assert.equal(Number(await lastUsed(key.id)), first);

    const listed = (await (await t.request('/svc/v1/admin/keys', { headers: auth })).json()).data.find((k: { id: string }) =>
      k.id === key.id
    );
    assert.equal(listed.last_used_at, new Date(first).toISOString());
  });
});
