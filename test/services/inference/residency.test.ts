import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createInferenceEngine, type EngineSettings } from '../../../src/services/inference/engine.ts';
import { createSlots } from '../../../src/services/inference/slots.ts';
import { parseKeepAlive } from '../../../src/services/inference/keep-alive.ts';
import { ServiceError } from '../../../src/services/errors.ts';
import type { ModelSpec } from '../../../src/services/inference/residency.ts';
import { TEST_ENGINE, TINY_EMBED, TINY_LLAMA, TINY_RERANKER } from './fixtures.ts';

const llama: ModelSpec = { name: 'tiny-llama', dir: TINY_LLAMA, task: 'text-generation' };
const llamaQ8: ModelSpec = { name: 'tiny-llama:q8', dir: TINY_LLAMA, task: 'text-generation', dtype: 'q8' };
const embed: ModelSpec = { name: 'tiny-embed', dir: TINY_EMBED, task: 'feature-extraction' };
const rerank: ModelSpec = { name: 'tiny-rerank', dir: TINY_RERANKER, task: 'text-classification' };
const input = { messages: [{ role: 'user', content: 'hello' }] };
const engines: { close(): Promise<void> }[] = [];
const engine = (s: Partial<EngineSettings> = {}) => {
  const e = createInferenceEngine({ ...TEST_ENGINE, ...s });
  engines.push(e);
  return e;
};
after(async () => {
  for (const e of engines) await e.close();
});

test('keep_alive forms', () => {
  assert.equal(parseKeepAlive('5m', 300), 300_000);
  assert.equal(parseKeepAlive('1h30m', 300), 5_400_000);
  assert.equal(parseKeepAlive(10, 300), 10_000);
  assert.equal(parseKeepAlive('10', 300), 10_000);
  assert.equal(parseKeepAlive(-1, 300), Infinity);
  assert.equal(parseKeepAlive('-1m', 300), Infinity);
  assert.equal(parseKeepAlive(0, 300), 0);
  assert.equal(parseKeepAlive(undefined, 300), 300_000);
  assert.throws(() => parseKeepAlive('soon', 300), (e: unknown) => e instanceof ServiceError && e.status === 400);
});

test('a model loads on first use and is listed with size, backend and expiry', async () => {
  const e = engine();
  assert.equal(e.list().length, 0);
  const g = await e.generate(llama, input, { temperature: 0, maxTokens: 4, keepAlive: '5m' });
  for await (const _ of g);
  const r = await g.result;
  assert.ok(r.timings.loadNs > 0, 'first use reports the load time');
  const [info] = e.list();
  assert.equal(info.name, 'tiny-llama');
  assert.equal(info.device, 'cpu');
  assert.ok(info.sizeBytes > 0);
  assert.ok(info.expiresAt && Math.abs(info.expiresAt.getTime() - Date.now() - 300_000) < 5_000);
  const g2 = await e.generate(llama, input, { temperature: 0, maxTokens: 2, keepAlive: -1 });
  for await (const _ of g2);
  assert.equal((await g2.result).timings.loadNs, 0, 'second use finds it resident');
  assert.equal(e.list()[0].expiresAt, null, 'negative keep_alive: kept until evicted');
});

test('keep_alive 0 unloads (preload/unload and after a request)', async () => {
  const e = engine();
  await e.preload(llama);
  assert.ok(e.residency.isLoaded('tiny-llama'));
  await e.preload(llama, 0);
  assert.ok(!e.residency.isLoaded('tiny-llama'));
  const g = await e.generate(llama, input, { temperature: 0, maxTokens: 2, keepAlive: 0 });
  for await (const _ of g);
  await g.result;
  await new Promise((r) => setImmediate(r));
  assert.ok(!e.residency.isLoaded('tiny-llama'), 'unloaded once the request ended');
});

test('least recently used idle model is evicted at the max-loaded-models limit', async () => {
  const e = engine({ maxLoadedModels: 2 });
  await e.preload(llama);
  await e.embed(embed, ['a']);
  await e.preload(llama); // llama now more recent than embed
  await e.rerank(rerank, 'q', ['d']);
  assert.deepEqual(e.list().map((m) => m.name).sort(), ['tiny-llama', 'tiny-rerank']);
});

test('memory budget evicts idle models to fit a new one', async () => {
  const e = engine({ memoryBudgetBytes: 300_000 }); // fp32 llama 249 kB + embed 115 kB would not fit
  await e.preload(llama);
  await e.embed(embed, ['a']);
  assert.deepEqual(e.list().map((m) => m.name), ['tiny-embed']);
  await e.preload(llamaQ8); // q8 105 kB fits beside the embedder
  assert.deepEqual(e.list().map((m) => m.name).sort(), ['tiny-embed', 'tiny-llama:q8']);
  assert.equal(e.list().find((m) => m.name === 'tiny-llama:q8')?.dtype, 'q8');
});

test('Reject policy answers 503 with Retry-After: 1 when every slot is busy', async () => {
  const e = engine({ saturationPolicy: 'Reject' });
  const g = await e.generate(llama, input, { temperature: 0, maxTokens: 200 });
  await assert.rejects(
    e.generate(llama, input, { maxTokens: 1 }),
    (err: unknown) =>
      err instanceof ServiceError && err.status === 503 && err.reason === 'service_unavailable' && err.headers?.['Retry-After'] === '1',
  );
  for await (const _ of g);
  await g.result;
  const again = await e.generate(llama, input, { temperature: 0, maxTokens: 1 });
  for await (const _ of again);
});

test('cancel frees the slot at once for a queued request', async () => {
  const e = engine({ saturationPolicy: 'Queue' });
  await e.preload(llama);
  const ac = new AbortController();
  const first = await e.generate(llama, input, { temperature: 0, maxTokens: 400, signal: ac.signal });
  const it = first[Symbol.asyncIterator]();
  await it.next();
  let secondStarted = false;
  const second = e.generate(llama, input, { temperature: 0, maxTokens: 3 }).then((g) => ((secondStarted = true), g));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(secondStarted, false, 'second request waits for the only slot');
  assert.equal(e.list()[0].queued, 1);
  const t0 = performance.now();
  ac.abort();
  const g2 = await second;
  assert.ok(performance.now() - t0 < 50, 'slot handed over immediately');
  await assert.rejects(first.result, { name: 'AbortError' });
  for await (const _ of g2);
  assert.equal((await g2.result).completionTokens, 3);
});

test('an aborted queued request leaves the queue', async () => {
  const s = createSlots(1, 'Queue');
  const release = await s.acquire();
  const ac = new AbortController();
  const waiting = s.acquire(ac.signal);
  assert.equal(s.waiting, 1);
  ac.abort();
  await assert.rejects(waiting, { name: 'AbortError' });
  assert.equal(s.waiting, 0);
  release();
  assert.equal(s.busy, 0);
});

test('device memory release on CPU reports that nothing was held', async () => {
  const e = engine();
  await e.preload(llama);
  const r = await e.releaseDeviceMemory();
  assert.equal(r.bytes, 0);
  assert.deepEqual(r.released, []);
  assert.match(r.note, /CPU\/WASM/);
  assert.ok(e.residency.isLoaded('tiny-llama'));
});
