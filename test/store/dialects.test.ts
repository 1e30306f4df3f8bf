/**
 * The store on both dialects: every migration, jobs, keys, settings, full text and vectors, and the job
 * contract across two nodes (421, cross-node cancel, ceiling divided by live nodes, the svc-node cookie),
 * run once on an embedded libSQL file and once on a throw-away PostgreSQL server.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { openStore } from '../../src/store/db.ts';
import { isPostgres } from '../../src/store/dialect.ts';
import { cancelRequestsFor, failLostJobs, finishJob, getJob, insertJob, requestCancel } from '../../src/store/jobs.ts';
import { migrate, migrations } from '../../src/store/migrations.ts';
import { readSetting, writeSetting } from '../../src/store/settings.ts';
import { deleteChunks, exactVectorSearch, ftsSearch, insertChunks, storeVectors } from '../../src/store/retrieval.ts';
import { heartbeat, liveNodeTags } from '../../src/store/fleet-nodes.ts';
import { inProcess, json, tempDir } from '../support/server.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { assertCancelAcrossNodes, otherNodeAnswer, TaskProbe, testTasks } from '../support/test-tasks.ts';

let pgServer: TestPostgres;
before(async () => {
  pgServer = await startPostgres();
});
after(async () => {
  await pgServer?.stop();
});

const dialects: { name: string; url: () => Promise<string> }[] = [
  { name: 'libSQL', url: async () => `file:${join(await tempDir(), 'svc.db')}` },
  { name: 'PostgreSQL', url: () => pgServer.newDatabase() },
];

const job = (id: string, node: string) => ({
  id,
  owner_id: 'k1',
  node,
  task: 't',
  status: 'processing' as const,
  result: null,
  result_location: null,
  error: null,
  error_code: null,
  error_reason: null,
  progress_current: null,
  progress_total: null,
  cancel_requested: 0,
  created_at: 1_700_000_000_000,
  completed_at: null,
});

for (const d of dialects) {
  describe(`store on ${d.name}`, () => {
    test('every migration applies once, on two stores of one database; numbers come back as numbers', async () => {
      const url = await d.url();
      // PostgreSQL nodes may start at the same moment (the migrations take an advisory lock); libSQL files are
      // opened one after the other here (its client's transactions do not wait on a busy file).
      const [a, b] = d.name === 'PostgreSQL'
        ? await Promise.all([openStore(url), openStore(url)])
        : [await openStore(url), await openStore(url)];
      assert.equal(isPostgres(a.db), d.name === 'PostgreSQL');
      assert.deepEqual(await migrate(a.db), []);
      const applied = await a.db.selectFrom('schema_migrations' as never).selectAll().execute() as { version: number }[];
      assert.deepEqual(applied.map((r) => Number(r.version)).sort((x, y) => x - y), migrations.map((m) => m.version).sort((x, y) => x - y));
      await writeSetting(a.db, 'sync_timeout', 7);
      assert.equal(await readSetting(b.db, 'sync_timeout', 0), 7);
      await insertJob(a.db, job('n1aaaa-1', 'n1aaaa'));
      const row = await getJob(b.db, 'n1aaaa-1');
      assert.equal(typeof row!.created_at, 'number');
      assert.equal(row!.created_at, 1_700_000_000_000);
      await requestCancel(b.db, 'n1aaaa-1');
      assert.deepEqual(await cancelRequestsFor(a.db, 'n1aaaa'), ['n1aaaa-1']);
      assert.equal(await failLostJobs(b.db, 'n1aaaa', 5), 1);
      assert.equal(await finishJob(a.db, 'n1aaaa-1', { status: 'completed', completed_at: 6 }), false, 'a lost job stays lost');
      assert.equal((await getJob(a.db, 'n1aaaa-1'))!.error_reason, 'job_lost');
      await heartbeat(a.db, 'n1aaaa', 100, 1);
      await heartbeat(a.db, 'n2bbbb', 50, 1);
      await heartbeat(a.db, 'n1aaaa', 120, 1);
      assert.deepEqual(await liveNodeTags(b.db, 100), ['n1aaaa']);
      await a.close();
      await b.close();
    });

    test('full text and vectors: ranked search, exact cosine order, delete', async () => {
      const s = await openStore(await d.url());
      const ids = await insertChunks(s.db, 'vs1', 'doc1', [
        { position: 0, text: 'The quick brown fox jumps over the lazy dog', meta: {} },
        { position: 1, text: 'PostgreSQL stores tsvector columns', meta: {} },
        { position: 2, text: 'A fox, a fox, another fox', meta: {} },
      ]);
      const hits = await ftsSearch(s.db, ['vs1'], 'fox', 10);
      assert.deepEqual(hits.map((h) => h.id).sort(), [ids[0], ids[2]].sort());
      assert.equal(hits[0]!.id, ids[2], 'the chunk naming fox three times ranks first');
      assert.deepEqual(await ftsSearch(s.db, ['other'], 'fox', 10), [], 'scoped to the index');
      assert.deepEqual(
        await ftsSearch(s.db, ['vs1'], `it's "fox" & | !`, 10).then((h) => h.length),
        2,
        'query syntax characters are plain text',
      );
      await storeVectors(s.db, 3, [
        { chunkId: ids[0]!, indexId: 'vs1', vector: Float32Array.from([1, 0, 0]) },
        { chunkId: ids[1]!, indexId: 'vs1', vector: Float32Array.from([0, 1, 0]) },
        { chunkId: ids[2]!, indexId: 'vs1', vector: Float32Array.from([0.7, 0.7, 0]) },
      ]);
      const near = await exactVectorSearch(s.db, 3, ['vs1'], Float32Array.from([0.9, 0.1, 0]), 3);
      assert.deepEqual(near.map((h) => h.id), [ids[0], ids[2], ids[1]]);
      assert.ok(Math.abs(near[0]!.distance - (1 - 0.9 / Math.hypot(0.9, 0.1))) < 1e-5);
      await deleteChunks(s.db, 'vs1');
      assert.deepEqual(await ftsSearch(s.db, ['vs1'], 'fox', 10), []);
      assert.deepEqual(await exactVectorSearch(s.db, 3, ['vs1'], Float32Array.from([1, 0, 0]), 3), []);
      await s.close();
    });

    test('two nodes on one database: 421 for a result held elsewhere, cross-node cancel, ceiling divided, cookie on 202', async () => {
      const databaseUrl = await d.url();
      const probe = new TaskProbe();
      const a = await inProcess({ databaseUrl, fleet: true, maxJobsPerOwner: 4 }, { extraRoutes: testTasks(probe) });
      const b = await inProcess({ databaseUrl, fleet: true, maxJobsPerOwner: 4 }, { extraRoutes: testTasks(probe) });
      try {
        await a.s.fleet!.beat(); // B heartbeat at its start; A learns of it on its next beat
        assert.deepEqual(a.s.fleet!.liveNodes(), [a.s.nodeTag, b.s.nodeTag].sort());
        const big = await a.request('/svc/v1/test/work', json({ bytes: 5 * 1024 * 1024 }, { prefer: 'respond-async' }));
        assert.equal(big.status, 202);
        assert.equal(big.headers.get('set-cookie'), `svc-node=${a.s.nodeTag}; Path=/; HttpOnly; SameSite=Lax`);
        const { job_id } = await big.json();
        const mis = await otherNodeAnswer(b, job_id);
        assert.equal(mis.status, 421);
        assert.deepEqual({ ...(await mis.json()), hint: 'h' }, {
          error: 'not_on_this_node',
          node: a.s.nodeTag,
          hint: 'h',
          message: `this job's result is held by node ${a.s.nodeTag}`,
        });

        await assertCancelAcrossNodes(a, b, `never-${d.name}`);

        // Ceiling 4 over two live nodes: each admits 2 of a key's tasks; when B leaves, A admits all 4.
        const gate = `ceiling-${d.name}`;
        for (let i = 0; i < 2; i++) {
          assert.equal((await a.request('/svc/v1/test/work', json({ gate }, { prefer: 'respond-async' }))).status, 202);
        }
        const refused = await a.request('/svc/v1/test/work', json({ gate }, { prefer: 'respond-async' }));
        assert.equal(refused.status, 429);
        assert.equal(refused.headers.get('retry-after'), '5');
        assert.match((await refused.json()).message, /ceiling of 2 .*share of 4 over 2 live nodes/);
        await b.close();
        await a.s.fleet!.beat();
        assert.deepEqual(a.s.fleet!.liveNodes(), [a.s.nodeTag]);
        for (let i = 0; i < 2; i++) {
          assert.equal((await a.request('/svc/v1/test/work', json({ gate }, { prefer: 'respond-async' }))).status, 202);
        }
        assert.equal((await a.request('/svc/v1/test/work', json({ gate }, { prefer: 'respond-async' }))).status, 429);
        probe.open(gate);
      } finally {
        await a.close();
        await b.close().catch(() => {});
      }
    });
  });
}
