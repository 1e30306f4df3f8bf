/**
 * End to end: PostgreSQL, three node processes and Debian's nginx running the shipped deploy/nginx.conf
 * on loopback. Judged by what a client sees through nginx and from the nodes directly.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { freePort } from '../support/free-port.ts';
import { type RunningNginx, startNginx } from '../support/nginx.ts';
import { tempDir } from '../support/server.ts';
import { createKeyByCli } from '../support/cli-key.ts';

const HEARTBEAT_S = 1;
const NODE_TIMEOUT_S = 3;
const CEILING = 6;
const TAGS = ['node01', 'node02', 'node03'];

interface Node {
  tag: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  url: string;
}

let pg: TestPostgres;
let nginx: RunningNginx;
let databaseUrl: string;
let filesDir: string;
let token: string;
const nodes: Node[] = [];
const dirs: string[] = [];

function nodeArgs(tag: string, port: number, dataDir: string): string[] {
  return [
    'serve',
    '--database-url',
    databaseUrl,
    '--data-dir',
    dataDir,
    '--port',
    String(port),
    '--node-tag',
    tag,
    '--files-dir',
    filesDir,
    '--fleet-heartbeat-seconds',
    String(HEARTBEAT_S),
    '--fleet-node-timeout-seconds',
    String(NODE_TIMEOUT_S),
    '--max-jobs-per-owner',
    String(CEILING),
    '--require-keys',
    '--log-level',
    'warn',
  ];
}

function startNode(tag: string, port: number, dataDir: string): Promise<Node> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/serve-fleet-node.ts', ...nodeArgs(tag, port, dataDir)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /READY (\S+) (\S+)/.exec(out);
      if (m) resolve({ tag: m[2]!, port, dataDir, child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`node ${tag} exited ${code}`)));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const auth = () => ({ authorization: `Bearer ${token}` });
const submit = (base: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/svc/v1/test/work`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', prefer: 'respond-async', ...auth(), ...headers },
    body: JSON.stringify(body),
  });
const poll = (base: string, id: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/svc/v1/jobs/${id}`, { headers: { ...auth(), ...headers } });

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Every job a 202 acknowledged, with what its record must end as. */
const acknowledged = new Map<string, (rec: { status: string; error_reason: string | null; result: unknown }) => void>();
/** Completed jobs whose result (over 4 MiB) only the killed node held: lost with its memory, by design. */
const heldByKilled = new Set<string>();
const bigResults = new Map<string, string>(); // job id → node holding its result

before(async () => {
  const t0 = performance.now();
  pg = await startPostgres();
  databaseUrl = await pg.newDatabase('svc_fleet');
  filesDir = await tempDir('svc-fleet-files-');
  dirs.push(filesDir);
  const keyDir = await tempDir();
  dirs.push(keyDir);
  token = createKeyByCli('fleet', databaseUrl, keyDir);
  const ports = await Promise.all(TAGS.map(() => freePort()));
  for (let i = 0; i < TAGS.length; i++) {
    const dataDir = await tempDir('svc-fleet-node-');
    dirs.push(dataDir);
    nodes.push(await startNode(TAGS[i]!, ports[i]!, dataDir));
  }
  nginx = await startNginx(ports);
  console.error(`fleet up in ${Math.round(performance.now() - t0)} ms`);
  await sleep(HEARTBEAT_S * 1000 * 2.5); // every node has seen the other two
});

after(async () => {
  await nginx?.stop();
  for (const n of nodes) {
    if (n.child.exitCode === null && n.child.signalCode === null) {
      n.child.kill('SIGTERM');
      await new Promise((r) => n.child.once('exit', r));
    }
  }
  await pg?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const node = (tag: string) => nodes.find((n) => n.tag === tag)!;

test('a job submitted through nginx is polled through nginx by the svc-node cookie and by the bearer token', async () => {
  const r = await submit(nginx.url, { value: 'through nginx' });
  assert.equal(r.status, 202);
  const runner = r.headers.get('x-svc-node')!;
  assert.ok(TAGS.includes(runner));
  assert.equal(r.headers.get('set-cookie'), `svc-node=${runner}; Path=/; HttpOnly; SameSite=Lax`);
  const { job_id } = await r.json();
  assert.equal(job_id.slice(0, 6), runner);
  acknowledged.set(job_id, (rec) => assert.deepEqual(rec.result, { echo: 'through nginx', answer: 42 }));

  // Bearer only: the consistent hash sends the key to the same node every time.
  for (let i = 0; i < 5; i++) {
    const p = await poll(nginx.url, job_id);
    assert.equal(p.status, 200);
    assert.equal(p.headers.get('x-svc-node'), runner, 'one Authorization value, one node');
  }
  // The cookie wins over the hash: a result only another node holds is fetched through nginx by its cookie.
  const other = TAGS.find((t) => t !== runner)!;
  const big = await submit(node(other).url, { bytes: 5 * 1024 * 1024 });
  assert.equal(big.status, 202);
  const cookie = big.headers.get('set-cookie')!.split(';')[0]!;
  assert.equal(cookie, `svc-node=${other}`);
  const bigId = (await big.json()).job_id;
  bigResults.set(bigId, other);
  acknowledged.set(bigId, (rec) => assert.equal((rec.result as { blob: string }).blob.length, 5 * 1024 * 1024));
  const done = await until('the big result', async () => {
    const p = await poll(nginx.url, bigId, { cookie });
    assert.equal(p.headers.get('x-svc-node'), other);
    const rec = await p.json();
    return rec.status === 'completed' ? rec : undefined;
  });
  assert.equal(done.result.blob.length, 5 * 1024 * 1024);
  // Without the cookie nginx hashes to the key's node, which does not hold it: 421 naming the holder.
  const misrouted = await poll(nginx.url, bigId);
  assert.equal(misrouted.status, 421);
  assert.equal((await misrouted.json()).node, other);
});

test('a node asked directly for a result held by another answers 421 not_on_this_node with the node tag', async () => {
  const holder = node('node01');
  const r = await submit(holder.url, { bytes: 5 * 1024 * 1024 });
  const { job_id } = await r.json();
  bigResults.set(job_id, 'node01');
  acknowledged.set(job_id, (rec) => assert.equal(rec.status, 'completed'));
  await until('completion', async () => ((await (await poll(holder.url, job_id)).json()).status === 'completed' ? true : undefined));
  for (const asked of [node('node02'), node('node03')]) {
    const p = await poll(asked.url, job_id);
    assert.equal(p.status, 421);
    const body = await p.json();
    assert.equal(body.error, 'not_on_this_node');
    assert.equal(body.node, 'node01');
    assert.match(body.hint, /node01/);
  }
});

test('a file uploaded to one node is read from another: bytes in the shared files directory, record in PostgreSQL', async () => {
  const bytes = new Uint8Array(randomBytes(300_000));
  const fd = new FormData();
  fd.append('file', new Blob([bytes]), 'shared.bin');
  const up = await fetch(`${node('node01').url}/svc/v1/files/upload`, { method: 'POST', body: fd, headers: auth() });
  assert.equal(up.status, 200);
  const { fileId } = await up.json();
  const got = await fetch(`${node('node03').url}/svc/v1/files/${fileId}/content`, { headers: auth() });
  assert.equal(got.status, 200);
  assert.deepEqual(new Uint8Array(await got.arrayBuffer()), bytes);
});

test('a WebSocket upgrade (Responses WebSocket mode) passes through nginx', async () => {
  const { request } = await import('node:http');
  const key = randomBytes(16).toString('base64');
  const status = await new Promise<{ code: number; accept?: string }>((resolve, reject) => {
    const req = request(`${nginx.url}/v1/responses`, {
      headers: { ...auth(), connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': key },
    });
    req.once('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ code: res.statusCode!, accept: res.headers['sec-websocket-accept'] as string });
    });
    req.once('response', (res) => {
      res.resume();
      resolve({ code: res.statusCode! });
    });
    req.once('error', reject);
    req.end();
  });
  assert.equal(status.code, 101);
  const { createHash } = await import('node:crypto');
  assert.equal(
    status.accept,
    createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64'),
    'RFC 6455 accept value',
  );
});

test('a cancel sent to another node answers 202 cancel_requested and the running node honours it', async () => {
  const r = await submit(node('node01').url, { ms: 60_000 });
  const { job_id } = await r.json();
  acknowledged.set(job_id, (rec) => assert.equal(rec.status, 'cancelled'));
  const del = await fetch(`${node('node03').url}/svc/v1/jobs/${job_id}`, { method: 'DELETE', headers: auth() });
  assert.equal(del.status, 202);
  assert.deepEqual(await del.json(), { cancel_requested: true, node: 'node01' });
  assert.equal(del.headers.get('set-cookie'), 'svc-node=node01; Path=/; HttpOnly; SameSite=Lax', 'the cookie names the running node');
  const rec = await until('cancelled', async () => {
    const x = await (await poll(nginx.url, job_id)).json();
    return x.status === 'processing' ? undefined : x;
  }, 5_000);
  assert.equal(rec.status, 'cancelled');
  assert.equal(rec.error_reason, 'cancelled');
});

test('each of three live nodes admits the per-key ceiling divided by three', async () => {
  const n = node('node02');
  const ids: string[] = [];
  for (let i = 0; i < CEILING / 3; i++) {
    const r = await submit(n.url, { ms: 60_000 });
    assert.equal(r.status, 202);
    ids.push((await r.json()).job_id);
  }
  const refused = await submit(n.url, { ms: 60_000 });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('retry-after'), '5');
  const body = await refused.json();
  assert.equal(body.error, 'too_many_inflight_jobs');
  assert.match(body.message, /ceiling of 2 .*share of 6 over 3 live nodes/);
  // Another node still has its own share.
  const elsewhere = await submit(node('node03').url, { ms: 1 });
  assert.equal(elsewhere.status, 202);
  acknowledged.set((await elsewhere.json()).job_id, (rec) => assert.equal(rec.status, 'completed'));
  for (const id of ids) {
    const del = await fetch(`${n.url}/svc/v1/jobs/${id}`, { method: 'DELETE', headers: auth() });
    assert.equal(del.status, 200);
    acknowledged.set(id, (rec) => assert.equal(rec.status, 'cancelled'));
  }
});

test('kill -9 of a node: its processing jobs are failed with job_lost by the survivors after the heartbeat period; restarted, it serves again', async () => {
  const victim = node('node02');
  const r = await submit(nginx.url, { ms: 120_000 }, { cookie: 'svc-node=node02' });
  assert.equal(r.status, 202);
  assert.equal(r.headers.get('x-svc-node'), 'node02', 'the cookie picked the node');
  const { job_id } = await r.json();
  acknowledged.set(job_id, (rec) => assert.equal(rec.error_reason, 'job_lost'));
  const big = await submit(victim.url, { bytes: 5 * 1024 * 1024 });
  const bigId = (await big.json()).job_id;
  await until(
    'the big result on node02',
    async () => ((await (await poll(victim.url, bigId)).json()).status === 'completed' ? true : undefined),
  );
  bigResults.set(bigId, 'node02');
  assert.equal((await poll(node('node01').url, bigId)).status, 421, 'held by a live node: 421');
  for (const [id, holder] of bigResults) if (holder === 'node02') heldByKilled.add(id);
  const killedAt = Date.now();
  victim.child.kill('SIGKILL');
  await new Promise((res) => victim.child.once('exit', res));

  // Through nginx with the dead node's cookie: a backup node answers from the shared record.
  const rec = await until('job_lost', async () => {
    const p = await poll(nginx.url, job_id, { cookie: 'svc-node=node02' });
    assert.equal(p.status, 200);
    assert.notEqual(p.headers.get('x-svc-node'), 'node02');
    const x = await p.json();
    return x.status === 'processing' ? undefined : x;
  }, (NODE_TIMEOUT_S + HEARTBEAT_S * 3) * 1000);
  const waited = Date.now() - killedAt;
  assert.equal(rec.status, 'failed');
  assert.equal(rec.error_reason, 'job_lost');
  assert.equal(rec.error_code, 503);
  assert.ok(waited >= (NODE_TIMEOUT_S - HEARTBEAT_S) * 1000, `failed only after the node timeout (${waited} ms)`);
  // Each survivor refreshes its list of live nodes on its own heartbeat.
  await sleep(HEARTBEAT_S * 1500);
  // A big result the dead node held: the survivors answer 404 (gone), not a 421 pointing at a dead node.
  for (const id of heldByKilled) {
    const p = await poll(node('node01').url, id);
    assert.equal(p.status, 404);
    assert.match((await p.json()).message, /held by node node02, which has stopped/);
  }

  // The ceiling follows the live count: two live nodes, 6 / 2 = 3.
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await submit(node('node03').url, { ms: 60_000 });
    assert.equal(s.status, 202, `admission ${i + 1} of 3 on two live nodes`);
    ids.push((await s.json()).job_id);
  }
  assert.equal((await submit(node('node03').url, { ms: 60_000 })).status, 429);
  for (const id of ids) {
    await fetch(`${node('node03').url}/svc/v1/jobs/${id}`, { method: 'DELETE', headers: auth() });
    acknowledged.set(id, (x) => assert.equal(x.status, 'cancelled'));
  }

  const restarted = await startNode('node02', victim.port, victim.dataDir);
  nodes[nodes.indexOf(victim)] = restarted;
  const again = await until('node02 back behind nginx', async () => {
    const s = await submit(nginx.url, { value: 'after restart' }, { cookie: 'svc-node=node02' });
    return s.headers.get('x-svc-node') === 'node02' ? s : undefined;
  });
  assert.equal(again.status, 202);
  const id2 = (await again.json()).job_id;
  acknowledged.set(id2, (x) => assert.deepEqual(x.result, { echo: 'after restart', answer: 42 }));
});

test('nothing acknowledged is lost: a burst through nginx, then every 202 ever given ends in its expected state', async () => {
  // One key hashes to one node, whose share of the ceiling is 2: the rest are refused with 429 (nothing
  // acknowledged, nothing kept) and sent again, as a client honouring Retry-After would (sooner, here).
  let refused = 0;
  await Promise.all(Array.from({ length: 30 }, async (_, i) => {
    for (;;) {
      const r = await submit(nginx.url, { value: i, ms: 20 });
      if (r.status === 429) {
        refused++;
        await r.body?.cancel();
        await sleep(50);
        continue;
      }
      assert.equal(r.status, 202);
      const { job_id } = await r.json();
      acknowledged.set(job_id, (rec) => assert.deepEqual(rec.result, { echo: i, answer: 42 }));
      return;
    }
  }));
  assert.ok(refused > 0, 'the per-node ceiling held under the burst');
  assert.ok(acknowledged.size >= 40, `${acknowledged.size} jobs acknowledged`);
  for (const [id, check] of acknowledged) {
    if (heldByKilled.has(id)) {
      // Its record survives (completed), its result was only in the killed process's memory.
      assert.equal((await poll(nginx.url, id, { cookie: `svc-node=${id.slice(0, 6)}` })).status, 404);
      continue;
    }
    const rec = await until(`job ${id}`, async () => {
      // Each job asked through nginx by its own node's cookie, as a cookie-aware client would.
      const p = await poll(nginx.url, id, { cookie: `svc-node=${id.slice(0, 6)}` });
      assert.equal(p.status, 200, `job ${id}: ${p.status}`);
      const x = await p.json();
      return x.status === 'processing' ? undefined : x;
    });
    check(rec);
  }
  assert.equal(await nginx.errors().then((e) => /\[(emerg|crit)\]/.test(e)), false);
});
