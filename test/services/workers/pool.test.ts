/**
 * The worker pool against real threads: results and errors cross intact, the event loop stays free while
 * a worker is blocked, and a worker that traps, overruns its deadline, runs out of memory, is cancelled or
 * grew too much is replaced by a fresh one (its module state starts over) while the pool keeps serving.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ServiceError } from '../../../src/services/errors.ts';
import { WorkerPool } from '../../../src/services/workers/pool.ts';
import { threadNice } from '../../support/thread-nice.ts';

const entry = new URL('../../support/worker-test-entry.ts', import.meta.url);
const pools: WorkerPool[] = [];
const pool = (o: ConstructorParameters<typeof WorkerPool>[0] = {}) => {
  const p = new WorkerPool({ entry, size: 1, ...o });
  pools.push(p);
  return p;
};
const rejectsWith = async (p: Promise<unknown>, status: number, reason: string) => {
  const e = await p.then(() => assert.fail('resolved'), (x: unknown) => x);
  assert.ok(e instanceof ServiceError, `not a ServiceError: ${e}`);
  assert.equal(e.status, status, e.message);
  assert.equal(e.reason, reason, e.message);
  return e;
};

describe('worker pool', () => {
  after(async () => {
    for (const p of pools) await p.close();
  });

  it('runs an operation; results, bytes, progress and ServiceErrors cross the thread', async () => {
    const p = pool();
    assert.deepEqual(await p.run('test.echo', { a: [1, 'x'] }), { a: [1, 'x'] });
    const r = (await p.run('test.bytes', { n: 1000 })) as { data: Uint8Array };
    assert.equal(r.data.length, 1000);
    assert.equal(r.data[999], 7);
    const seen: number[] = [];
    assert.equal(await p.run('test.progress', {}, { progress: (d) => seen.push(d!) }), 'done');
    assert.deepEqual(seen, [1, 2, 3]);
    const e = await rejectsWith(p.run('test.fail', {}), 422, 'pdf_corrupt');
    assert.deepEqual(e.details, [{ field: 'file' }]);
    assert.equal(p.stats.discarded, 0); // an expected failure keeps the worker
  });

  it('the event loop stays free while a worker is blocked', async () => {
    const p = pool();
    await p.run('test.calls', {});
    const lags: number[] = [];
    let stop = false;
    const ticker = (async () => {
      while (!stop) {
        const t = performance.now();
        await new Promise((r) => setTimeout(r, 10));
        lags.push(performance.now() - t - 10);
      }
    })();
    await p.run('test.block', { ms: 800 });
    stop = true;
    await ticker;
    assert.ok(lags.length > 20, `ticks: ${lags.length}`);
    assert.ok(Math.max(...lags) < 100, `max lag ${Math.max(...lags).toFixed(1)} ms`);
  });

  it('a WebAssembly trap discards the worker; the next task gets a fresh one', async () => {
    const p = pool();
    assert.equal(await p.run('test.calls', {}), 1);
    assert.equal(await p.run('test.calls', {}), 2);
    await rejectsWith(p.run('test.trap', {}), 422, 'engine_failed');
    assert.equal(p.stats.discarded, 1);
    assert.equal(await p.run('test.calls', {}), 1); // module state starts over
  });

  it('a task past its deadline is answered 422 deadline_exceeded at the deadline, and its worker replaced', async () => {
    const p = pool();
    const t = performance.now();
    const e = await rejectsWith(p.run('test.block', { ms: 10_000 }, { deadlineMs: 300 }), 422, 'deadline_exceeded');
    assert.ok(performance.now() - t < 2000, `took ${performance.now() - t} ms`);
    assert.match(e.message, /task-deadline-seconds/);
    assert.equal(await p.run('test.calls', {}), 1);
  });

  it('a worker out of heap is answered 422 memory_limit_exceeded; the pool goes on', async () => {
    const p = pool({ maxHeapMb: 64 });
    await rejectsWith(p.run('test.oom', {}), 422, 'memory_limit_exceeded');
    assert.equal(await p.run('test.calls', {}), 1);
  });

  it('cancel: a running task stops at once, a queued one never starts', async () => {
    const p = pool();
    await p.run('test.calls', {});
    const ac = new AbortController();
    const running = p.run('test.block', { ms: 10_000 }, { signal: ac.signal });
    const queued = p.run('test.block', { ms: 10_000 }, { signal: ac.signal });
    await new Promise((r) => setTimeout(r, 200));
    const t = performance.now();
    ac.abort(new Error('cancelled by the test'));
    await assert.rejects(running, /cancelled by the test/);
    await assert.rejects(queued, /cancelled by the test/);
    assert.ok(performance.now() - t < 500);
    assert.equal(await p.run('test.calls', {}), 1); // the blocked worker was replaced
  });

  it('a worker whose memory grew past recycleBytes is retired after its task', async () => {
    const p = pool({ recycleBytes: 32 * 1024 * 1024 });
    assert.equal(await p.run('test.calls', {}), 1);
    await p.run('test.grow', { mb: 8 });
    assert.equal(p.stats.recycled, 0);
    await p.run('test.grow', { mb: 64 });
    assert.equal(p.stats.recycled, 1);
    assert.equal(await p.run('test.calls', {}), 1);
  });

  it('runs `size` tasks at once and queues the rest in order', async () => {
    const p = pool({ size: 2 });
    await Promise.all([p.run('test.calls', {}), p.run('test.calls', {})]); // both threads started
    const t = performance.now();
    await Promise.all([1, 2, 3, 4].map(() => p.run('test.block', { ms: 300 })));
    const took = performance.now() - t;
    assert.ok(took >= 580 && took < 1500, `4 × 300 ms on 2 workers took ${took.toFixed(0)} ms`);
    assert.equal(p.stats.started, 2);
  });

  it('worker threads run the asked nice steps below the event loop thread, which keeps its own', async () => {
    const mine = threadNice();
    assert.equal(await pool({ nice: 7 }).run('test.nice', {}), Math.min(19, mine + 7));
    assert.equal(await pool().run('test.nice', {}), Math.min(19, mine + 10)); // the default
    assert.equal(await pool({ nice: 0 }).run('test.nice', {}), mine);
    assert.equal(threadNice(), mine);
  });
});
