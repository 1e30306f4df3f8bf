/**
 * Residency through dialect B: an empty chat/generate preloads (seen in /api/ps, which reports where the
 * model runs and has no expires_at), keep_alive 0 unloads; /api/show reports the backend of a loaded
 * model; the admin release-device route; the Reject policy answers 503 + Retry-After: 1 while the slot is
 * busy, and a client that disconnects frees the slot at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from './harness.ts';

describe('preload, unload, /api/ps, /api/show', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => h?.close());

  const loaded = async () => (await h.ollama.ps()).models.map((m) => m.name);

  it('empty chat preloads (done_reason load); keep_alive 0 unloads (done_reason unload)', async () => {
    assert.deepEqual(await loaded(), []);
    const r = await h.ollama.chat({ model: 'tiny-llama', messages: [] });
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'load');
    assert.deepEqual(r.message, { role: 'assistant', content: '' });
    assert.deepEqual(await loaded(), ['tiny-llama:test']);
    const u = await h.ollama.chat({ model: 'tiny-llama', messages: [], keep_alive: 0 });
    assert.equal(u.done_reason, 'unload');
    assert.deepEqual(await loaded(), []);
  });

  it('empty generate does the same; keep_alive 0 on a real request unloads after it', async () => {
    const r = await h.ollama.generate({ model: 'tiny-llama', prompt: '', keep_alive: '10m' });
    assert.deepEqual([r.done, r.done_reason, r.response], [true, 'load', '']);
    assert.deepEqual(await loaded(), ['tiny-llama:test']);
    await h.ollama.generate({ model: 'tiny-llama', prompt: '', keep_alive: 0 });
    assert.deepEqual(await loaded(), []);
    await h.ollama.generate({ model: 'tiny-llama', prompt: 'hi', keep_alive: 0, options: { num_predict: 2 } });
    assert.deepEqual(await loaded(), []);
  });

  it('/api/ps entries: size, digest, details, size_vram, backend; no expires_at', async () => {
    await h.ollama.chat({ model: 'tiny-llama', messages: [] });
    const res = await fetch(`${h.srv.url}/api/ps`);
    const { models } = await res.json();
    assert.equal(models.length, 1);
    const m = models[0];
    assert.equal(m.name, 'tiny-llama:test');
    assert.equal('expires_at' in m, false);
    assert.ok(m.size > 100_000);
    assert.match(m.digest, /^[0-9a-f]{64}$/);
    assert.equal(m.details.family, 'llama');
    assert.equal(m.size_vram, 0, 'runs on the CPU');
    assert.deepEqual({ device: m.backend.device, runtime: m.backend.runtime }, { device: 'cpu', runtime: 'onnxruntime-node' });
  });

  it('/api/show reports the backend while loaded, not otherwise', async () => {
    const loadedShow = await (await h.post('/api/show', { model: 'tiny-llama' })).json();
    assert.equal(loadedShow.backend.device, 'cpu');
    await h.ollama.chat({ model: 'tiny-llama', messages: [], keep_alive: 0 });
    const idle = await (await h.post('/api/show', { model: 'tiny-llama' })).json();
    assert.equal('backend' in idle, false);
    assert.ok(idle.capabilities.includes('thinking') && idle.capabilities.includes('tools'));
  });

  it('POST /svc/v1/admin/memory/release-device reports what it released (CPU sessions hold no device memory)', async () => {
    await h.ollama.chat({ model: 'tiny-llama', messages: [] });
    const res = await h.post('/svc/v1/admin/memory/release-device', {});
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual(body.released, []);
    assert.equal(body.bytes, 0);
    assert.match(body.note, /no idle GPU/);
    assert.deepEqual(await loaded(), ['tiny-llama:test'], 'CPU models stay loaded');
  });
});

describe('Reject saturation policy and cancellation', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ saturationPolicy: 'Reject', slotsPerModel: 1 });
  });
  after(async () => {
    h.steer(undefined);
    await h?.close();
  });

  it('a second generation while the slot is busy: 503 with Retry-After: 1; disconnecting the first frees the slot', async () => {
    // slow the model down: each step busy-waits 10 ms, so the first generation holds its slot for seconds
    h.steer(() => [
      (_i: bigint[][], l: unknown) => {
        const until = Date.now() + 10;
        while (Date.now() < until);
        return l;
      },
    ]);
    const first = new AbortController();
    const res1 = await h.post('/api/chat', {
      model: 'tiny-llama',
      messages: [{ role: 'user', content: 'hi' }],
      options: { num_predict: 400 },
    }, { signal: first.signal });
    assert.equal(res1.status, 200);
    const reader = res1.body!.getReader();
    await reader.read(); // the generation is running

    const res2 = await h.post('/api/chat', {
      model: 'tiny-llama',
      messages: [{ role: 'user', content: 'hi' }],
      stream: false,
      options: { num_predict: 2 },
    });
    assert.equal(res2.status, 503);
    assert.equal(res2.headers.get('retry-after'), '1');
    assert.equal(typeof (await res2.json()).error, 'string');
    const gen2 = await h.post('/api/generate', { model: 'tiny-llama', prompt: 'hi', stream: false });
    assert.equal(gen2.status, 503);

    first.abort();
    await reader.cancel().catch(() => {});
    h.steer(undefined);
    const t0 = Date.now();
    let status = 0;
    while (Date.now() - t0 < 3000) {
      const r = await h.post('/api/chat', {
        model: 'tiny-llama',
        messages: [{ role: 'user', content: 'hi' }],
        stream: false,
        options: { num_predict: 2 },
      });
      status = r.status;
      await r.body?.cancel();
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(status, 200, 'the slot was freed by the disconnect');
    assert.ok(Date.now() - t0 < 1500, `freed promptly (${Date.now() - t0} ms), long before the 400 tokens would have ended`);
    const ps = (await h.ollama.ps()).models[0] as unknown as { name: string };
    assert.equal(ps.name, 'tiny-llama:test');
  });
});
