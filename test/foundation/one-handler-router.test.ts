// The one-handler router against Hono's own compose: the same app built on both routers must answer alike.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Context, Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { afterNext, OneHandlerRouter } from '../../src/http/one-handler-router.ts';

const onError = (err: Error, c: Context) => c.json({ error: err.message }, 418);

function build(oneHandler: boolean) {
  const app = new Hono({ router: oneHandler ? new OneHandlerRouter(new RegExpRouter(), onError) : new RegExpRouter() });
  const trail: string[] = [];
  app.use('*', (c, next) => {
    trail.push('outer in');
    return afterNext(next(), () => {
      trail.push(`outer out ${c.res.status}`);
      c.res.headers.set('X-Outer', 'yes');
    });
  });
  app.use('/files/:id/*', async (c, next) => {
    trail.push(`files mw ${c.req.param('id')}`);
    await next();
  });
  app.get('/sync', (c) => c.text('sync'));
  app.get('/async', async (c) => {
    await new Promise((r) => setTimeout(r, 1));
    return c.text('async');
  });
  app.get('/throws', () => {
    throw new Error('thrown');
  });
  app.get('/rejects', async () => {
    await Promise.resolve();
    throw new Error('rejected');
  });
  app.get('/files/:id/meta', (c) => c.json({ id: c.req.param('id'), params: c.req.param() }));
  app.get('/passes', (_c, next) => next());
  app.get('/passes', (c) => c.text('second'));
  // two handlers giving one name to different segments: not fused, each still reads its own
  app.use('/users/:id/*', async (c, next) => {
    c.header('X-Uid', c.req.param('id'));
    await next();
  });
  app.get('/users/:group/:id', (c) => c.text(`${c.req.param('id')} of ${c.req.param('group')}`));
  app.use('*', async (_c, next) => {
    await next();
    trail.push('tail ran');
  });
  app.notFound((c) => c.text('nothing here', 404));
  app.onError(onError);
  return { app, trail };
}

async function answer(app: Hono, path: string, method = 'GET') {
  const res = await app.fetch(new Request(`http://x${path}`, { method }));
  return { status: res.status, body: await res.text(), outer: res.headers.get('x-outer'), uid: res.headers.get('x-uid') };
}

describe('one-handler router', () => {
  const cases = ['/sync', '/async', '/throws', '/rejects', '/files/42/meta', '/passes', '/users/staff/ann', '/missing'];
  for (const path of cases) {
    test(`${path}: same answer and the same handlers run as under Hono's compose`, async () => {
      const hono = build(false);
      const one = build(true);
      const want = await answer(hono.app, path);
      const got = await answer(one.app, path);
      assert.deepEqual(got, want);
      assert.deepEqual(one.trail, hono.trail);
      assert.equal(got.outer, 'yes', 'the outer middleware finished the response, errors and 404s included');
    });
  }

  test('the answers are what the routes say', async () => {
    const { app } = build(true);
    assert.deepEqual(await answer(app, '/throws'), { status: 418, body: '{"error":"thrown"}', outer: 'yes', uid: null });
    assert.deepEqual(JSON.parse((await answer(app, '/files/7/meta')).body), { id: '7', params: { id: '7' } });
    assert.deepEqual(await answer(app, '/users/staff/bo'), { status: 200, body: 'bo of staff', outer: 'yes', uid: 'staff' });
    assert.equal((await answer(app, '/passes')).body, 'second');
    assert.equal((await answer(app, '/sync', 'HEAD')).status, 200);
  });

  test('a request that nothing below answers asynchronously is answered synchronously', () => {
    const { app } = build(true);
    const res = app.fetch(new Request('http://x/sync'));
    assert.ok(res instanceof Response, 'a Response, not a promise of one');
    const later = app.fetch(new Request('http://x/async'));
    assert.ok(later instanceof Promise);
  });
});
