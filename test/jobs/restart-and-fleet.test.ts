import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { inProcess, json, tempDir } from '../support/server.ts';
import { assertCancelAcrossNodes, otherNodeAnswer, TaskProbe, testTasks } from '../support/test-tasks.ts';

function startProcess(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/serve-with-test-task.ts', dataDir, '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /READY (\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}

test('a job still processing when its server process dies is failed with job_lost after restart', async () => {
  const dataDir = await tempDir();
  const first = await startProcess(dataDir);
  const r = await fetch(`${first.url}/svc/v1/test/work`, json({ gate: 'never' }, { prefer: 'respond-async' }));
  assert.equal(r.status, 202);
  const { job_id } = await r.json();
  assert.equal((await (await fetch(`${first.url}/svc/v1/jobs/${job_id}`)).json()).status, 'processing');
  first.child.kill('SIGKILL');
  await new Promise((res) => first.child.once('exit', res));
  const second = await startProcess(dataDir);
  try {
    const rec = await (await fetch(`${second.url}/svc/v1/jobs/${job_id}`)).json();
    assert.equal(rec.status, 'failed');
    assert.equal(rec.error_reason, 'job_lost');
    assert.ok(rec.completed_at);
  } finally {
    second.child.kill('SIGTERM');
  }
});

test('fleet: a result held in another node memory answers 421; a cancel from another node answers 202 and is honoured', async () => {
  const shared = await tempDir();
  const databaseUrl = `file:${join(shared, 'fleet.db')}`;
  const probe = new TaskProbe();
  const a = await inProcess({ databaseUrl }, { extraRoutes: testTasks(probe) });
  const b = await inProcess({ databaseUrl }, { extraRoutes: testTasks(probe) });
  try {
    assert.notEqual(a.s.nodeTag, b.s.nodeTag);
    // A result over 4 MiB stays on node A.
    const big = await (await a.request('/svc/v1/test/work', json({ bytes: 5 * 1024 * 1024 }, { prefer: 'respond-async' }))).json();
    const mis = await otherNodeAnswer(b, big.job_id);
    assert.equal(mis.status, 421);
    const mb = await mis.json();
    assert.equal(mb.error, 'not_on_this_node');
    assert.equal(mb.node, a.s.nodeTag);
    assert.equal(typeof mb.hint, 'string');
    const onA = await (await a.request(`/svc/v1/jobs/${big.job_id}`)).json();
    assert.equal(onA.status, 'completed');
    assert.equal(onA.result.blob.length, 5 * 1024 * 1024);

    // Cancel through node B of a job running on node A.
    await assertCancelAcrossNodes(a, b, 'fleet-never');
  } finally {
    await a.close();
    await b.close();
  }
});
