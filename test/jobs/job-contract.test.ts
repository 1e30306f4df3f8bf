import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type InProcess, inProcess, json, listening } from '../support/server.ts';
import { TaskProbe, testTasks } from '../support/test-tasks.ts';

const WORK = '/svc/v1/test/work';
const ASYNC = { prefer: 'respond-async' };

async function pollUntilDone(
  t: { request(p: string, i?: RequestInit): Promise<Response> },
  id: string,
  headers: Record<string, string> = {},
) {
  for (let i = 0; i < 200; i++) {
    const r = await t.request(`/svc/v1/jobs/${id}`, { headers });
    const text = await r.text();
    const rec = JSON.parse(text);
    if (rec.status !== 'processing') return { rec, text };
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('job did not finish');
}

describe('job contract', () => {
  let t: InProcess;
  const probe = new TaskProbe();
  before(async () => {
    t = await inProcess({}, { extraRoutes: testTasks(probe) });
  });
  after(() => t.close());

  const setSyncTimeout = (n: number) =>
    t.request('/svc/v1/admin/settings', {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sync_timeout_seconds: n }),
    });

  test('sync timeout 0 (default): inline result, never registered as a job', async () => {
    assert.equal((await (await t.request('/svc/v1/admin/settings')).json()).sync_timeout_seconds, 0);
    const r = await t.request(WORK, json({ value: 'a', ms: 50 }));
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { echo: 'a', answer: 42 });
    const rows = await t.s.store.db.selectFrom('jobs').selectAll().execute();
    assert.equal(rows.length, 0);
  });

  test('positive sync timeout: a slow task answers 202 and the poll returns the same bytes as a sync call', async () => {
    assert.equal((await setSyncTimeout(1)).status, 200);
    try {
      const fast = await t.request(WORK, json({ value: { k: [1, 2, 'ü'] } }));
      assert.equal(fast.status, 200, 'finished in time: inline');
      const syncBytes = await fast.text();
      const slow = await t.request(WORK, json({ value: { k: [1, 2, 'ü'] }, ms: 1500 }));
      assert.equal(slow.status, 202);
      const body = await slow.json();
      assert.equal(body.status, 'processing');
      assert.equal(body.job_id.slice(0, 6), t.s.nodeTag);
      assert.match(body.message, /test-work/);
      assert.match(body.message, new RegExp(`GET /svc/v1/jobs/${body.job_id}`));
      assert.equal(slow.headers.get('location'), `/svc/v1/jobs/${body.job_id}`);
      assert.equal(slow.headers.get('x-svc-node'), t.s.nodeTag);
      const { rec, text } = await pollUntilDone(t, body.job_id);
      assert.equal(rec.status, 'completed');
      assert.ok(text.includes(`"result":${syncBytes}`), 'result is byte-for-byte the synchronous answer');
      assert.equal(rec.progress_current, 2);
      assert.equal(rec.progress_total, 2);
      assert.ok(Date.parse(rec.created_at) <= Date.parse(rec.completed_at));
      for (const k of ['error', 'error_code', 'error_reason']) assert.equal(rec[k], null);
    } finally {
      await setSyncTimeout(0);
    }
  });

  test('Prefer: respond-async answers 202 before any work runs, with timeout 0', async () => {
    const before = probe.started;
    const r = await t.request(WORK, json({ gate: 'g-async' }, ASYNC));
    assert.equal(r.status, 202);
    assert.equal(probe.started, before, 'no work ran before the 202');
    const { job_id } = await r.json();
    const processing = await (await t.request(`/svc/v1/jobs/${job_id}`)).json();
    assert.equal(processing.status, 'processing');
    assert.equal(processing.completed_at, null);
    assert.equal(processing.result, null);
    probe.open('g-async');
    const { rec } = await pollUntilDone(t, job_id);
    assert.equal(rec.status, 'completed');
  });

  test('a failure has the same status and reason inline and as a job', async () => {
    const fail = { status: 415, reason: 'unsupported_file_type', message: 'not a PDF' };
    const sync = await t.request(WORK, json({ fail }));
    assert.equal(sync.status, 415);
    const sb = await sync.json();
    assert.equal(sb.error, 'unsupported_file_type');
    const r = await t.request(WORK, json({ fail }, ASYNC));
    const { rec } = await pollUntilDone(t, (await r.json()).job_id);
    assert.equal(rec.status, 'failed');
    assert.equal(rec.error_code, 415);
    assert.equal(rec.error_reason, 'unsupported_file_type');
    assert.equal(rec.error, 'not a PDF');
  });

  test('an unexpected fault is a sanitized 500 in both forms', async () => {
    const sync = await t.request(WORK, json({ crash: true }));
    assert.equal(sync.status, 500);
    assert.ok(!(await sync.text()).includes('secret'));
    const { rec } = await pollUntilDone(t, (await (await t.request(WORK, json({ crash: true }, ASYNC))).json()).job_id);
    assert.equal(rec.error_code, 500);
    assert.equal(rec.error_reason, 'internal_error');
    assert.ok(!rec.error.includes('secret'));
  });

  test('a binary answer: bytes inline, a file id in the job record', async () => {
    const sync = await t.request(WORK, json({ binary: 'PDF-BYTES' }));
    assert.equal(sync.headers.get('content-type'), 'application/octet-stream');
    assert.equal(await sync.text(), 'PDF-BYTES');
    const { rec } = await pollUntilDone(t, (await (await t.request(WORK, json({ binary: 'PDF-BYTES' }, ASYNC))).json()).job_id);
    assert.equal(rec.result.content_type, 'application/octet-stream');
    const content = await t.request(`/svc/v1/files/${rec.result.file_id}/content`);
    assert.equal(await content.text(), 'PDF-BYTES');
  });

  test('another key gets 404 for poll and cancel', async () => {
    const t2 = await inProcess({}, { extraRoutes: testTasks(probe) });
    try {
      const admin = await (await t2.request('/svc/v1/admin/keys', json({ name: 'admin' }))).json();
      const other =
        await (await t2.request('/svc/v1/admin/keys', json({ name: 'other', role: 'user' }, { authorization: `Bearer ${admin.token}` })))
          .json();
      const mine = { authorization: `Bearer ${admin.token}` };
      const theirs = { authorization: `Bearer ${other.token}` };
      const r = await t2.request(WORK, json({ gate: 'g-owner' }, { ...ASYNC, ...mine }));
      const { job_id } = await r.json();
      assert.equal((await t2.request(`/svc/v1/jobs/${job_id}`, { headers: theirs })).status, 404);
      assert.equal((await t2.request(`/svc/v1/jobs/${job_id}`, { method: 'DELETE', headers: theirs })).status, 404);
      assert.equal((await t2.request(`/svc/v1/jobs/${job_id}`, { headers: mine })).status, 200);
      // The operator sees it and can cancel it.
      const active = await (await t2.request('/svc/v1/admin/jobs', { headers: mine })).json();
      assert.ok(active.data.some((j: { job_id: string }) => j.job_id === job_id));
      const cancel = await t2.request(`/svc/v1/jobs/${job_id}`, { method: 'DELETE', headers: mine });
      assert.equal(cancel.status, 200);
      assert.equal((await cancel.json()).status, 'cancelled');
      const rec = await (await t2.request(`/svc/v1/jobs/${job_id}`, { headers: mine })).json();
      assert.equal(rec.status, 'cancelled');
      assert.ok(rec.completed_at);
    } finally {
      probe.open('g-owner');
      await t2.close();
    }
  });

  test('unknown job ids are 404', async () => {
    assert.equal((await t.request('/svc/v1/jobs/zzzzzz-nothing')).status, 404);
    assert.equal((await t.request('/svc/v1/jobs/zzzzzz-nothing', { method: 'DELETE' })).status, 404);
  });
});

describe('ceiling, retention, cancellation of a blocked caller', () => {
  test('429 at the ceiling with Retry-After: 5 and the work not started; counted until the work completes', async () => {
    const probe = new TaskProbe();
    const t = await inProcess({ maxJobsPerOwner: 2 }, { extraRoutes: testTasks(probe) });
    try {
      const a = await t.request(WORK, json({ gate: 'c1' }, ASYNC));
      const b = await t.request(WORK, json({ gate: 'c2' }, ASYNC));
      assert.equal(a.status, 202);
      assert.equal(b.status, 202);
      await new Promise((r) => setTimeout(r, 20));
      const startedBefore = probe.started;
      const c = await t.request(WORK, json({ value: 'third' }));
      assert.equal(c.status, 429);
      assert.equal(c.headers.get('retry-after'), '5');
      assert.equal((await c.json()).error, 'too_many_inflight_jobs');
      assert.equal(probe.started, startedBefore, 'nothing ran');
      probe.open('c1');
      await pollUntilDone(t, (await a.json()).job_id);
      await new Promise((r) => setTimeout(r, 20));
      assert.equal((await t.request(WORK, json({ value: 'now' }))).status, 200, 'admitted once one finished');
      probe.open('c2');
    } finally {
      await t.close();
    }
  });

  test('a cancelled job frees its place at once, though its work notices the abort only later; its record stays cancelled', async () => {
    const probe = new TaskProbe();
    const t = await inProcess({ maxJobsPerOwner: 1 }, { extraRoutes: testTasks(probe) });
    try {
      const a = await t.request(WORK, json({ deafGate: 'late' }, ASYNC));
      assert.equal(a.status, 202);
      const { job_id } = await a.json();
      assert.equal((await t.request(WORK, json({ value: 'refused' }))).status, 429);
      const cancel = await t.request(`/svc/v1/jobs/${job_id}`, { method: 'DELETE' });
      assert.equal(cancel.status, 200);
      assert.equal((await cancel.json()).status, 'cancelled');
      const next = await t.request(WORK, json({ gate: 'next' }, ASYNC));
      assert.equal(next.status, 202, 'admitted right after the cancel was answered');
      // the cancelled work ends later and completes: its record keeps the answer the caller was given, and its
      // end frees no place a second time (the next job still holds the only one)
      probe.open('late');
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await (await t.request(`/svc/v1/jobs/${job_id}`)).json()).status, 'cancelled');
      assert.equal((await t.request(WORK, json({ value: 'refused' }))).status, 429, 'the place was not released twice');
      probe.open('next');
      await pollUntilDone(t, (await next.json()).job_id);
    } finally {
      await t.close();
    }
  });

  test('a finished record expires after the retention, then polls answer 404', async () => {
    const probe = new TaskProbe();
    const t = await inProcess({ jobRetentionSeconds: 1 }, { extraRoutes: testTasks(probe) });
    try {
      const { job_id } = await (await t.request(WORK, json({}, ASYNC))).json();
      await pollUntilDone(t, job_id);
      assert.equal((await t.request(`/svc/v1/jobs/${job_id}`)).status, 200);
      await new Promise((r) => setTimeout(r, 1100));
      assert.equal((await t.request(`/svc/v1/jobs/${job_id}`)).status, 404);
      await t.s.jobs.sweep();
      assert.equal((await t.s.store.db.selectFrom('jobs').selectAll().execute()).length, 0, 'the record is removed');
    } finally {
      await t.close();
    }
  });

  test('cancel makes the blocked synchronous caller receive 499 and aborts the work', async () => {
    const probe = new TaskProbe();
    const srv = await listening({}, { extraRoutes: testTasks(probe) });
    try {
      const blocked = fetch(`${srv.url}${WORK}`, json({ gate: 'never' }));
      let active: { job_id: string; mode: string }[] = [];
      for (let i = 0; i < 100 && active.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        active = (await (await fetch(`${srv.url}/svc/v1/admin/jobs`)).json()).data;
      }
      assert.equal(active.length, 1);
      assert.equal(active[0].mode, 'inline');
      const del = await fetch(`${srv.url}/svc/v1/jobs/${active[0].job_id}`, { method: 'DELETE' });
      assert.equal(del.status, 200);
      const r = await blocked;
      assert.equal(r.status, 499);
      assert.equal((await r.json()).error, 'cancelled');
      assert.equal(probe.aborted, 1, 'the work saw the abort signal');
      assert.equal((await fetch(`${srv.url}/svc/v1/jobs/${active[0].job_id}`)).status, 404, 'an inline task is never a job');
    } finally {
      await srv.stop();
    }
  });

  test('a client that closes a synchronous task aborts the work', async () => {
    const probe = new TaskProbe();
    const srv = await listening({}, { extraRoutes: testTasks(probe) });
    try {
      const ac = new AbortController();
      const req = fetch(`${srv.url}${WORK}`, { ...json({ gate: 'never' }), signal: ac.signal }).catch(() => null);
      for (let i = 0; i < 100 && probe.started === 0; i++) await new Promise((r) => setTimeout(r, 20));
      ac.abort();
      await req;
      for (let i = 0; i < 100 && probe.aborted === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(probe.aborted, 1);
      for (let i = 0; i < 100 && srv.runner.active().length; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(srv.runner.inflightOf('local'), 0, 'its place is freed');
    } finally {
      await srv.stop();
    }
  });
});
