/**
 * POST /api/embed and the legacy POST /api/embeddings with the official `ollama` client: one vector per
 * input, over-long inputs chunked and mean-pooled (checked against the chunks embedded one by one),
 * truncate ignored, an empty legacy prompt gives an empty vector.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from './harness.ts';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => h?.close());

const norm = (v: number[]) => Math.hypot(...v);
const close = (a: number[], b: number[], eps = 1e-5) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < eps);

// tiny-bert-embed: a 64-token window ([CLS] + 62 + [SEP]); each lowercase letter is one token
const WINDOW = 62;
const letters = (n: number, offset = 0) => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((i * 7 + offset) % 26))).join(' ');

describe('/api/embed', () => {
  it('one normalised vector per input, with the duration fields', async () => {
    const r = await h.ollama.embed({ model: 'tiny-bert-embed', input: ['hello world', 'a b c', 'x'] });
    assert.equal(r.model, 'tiny-bert-embed:test');
    assert.equal(r.embeddings.length, 3);
    for (const v of r.embeddings) {
      assert.equal(v.length, 32);
      assert.ok(Math.abs(norm(v) - 1) < 1e-5);
    }
    assert.ok(r.prompt_eval_count > 0 && r.total_duration > 0 && typeof r.load_duration === 'number');
    const single = await h.ollama.embed({ model: 'tiny-bert-embed', input: 'a b c' });
    assert.ok(close(single.embeddings[0], r.embeddings[1]), 'a string input = a one-element array');
  });

  it('an over-long input is chunked: its vector is the normalised mean of the chunk vectors (truncate ignored)', async () => {
    const chunks = [letters(WINDOW, 0), letters(WINDOW, 3), letters(20, 5)];
    const long = chunks.join(' ');
    const [whole, parts] = await Promise.all([
      h.ollama.embed({ model: 'tiny-bert-embed', input: long, truncate: true }),
      h.ollama.embed({ model: 'tiny-bert-embed', input: chunks }),
    ]);
    const mean = parts.embeddings[0].map((_, d) => parts.embeddings.reduce((s, v) => s + v[d], 0) / parts.embeddings.length);
    const expected = mean.map((x) => x / norm(mean));
    assert.ok(close(whole.embeddings[0], expected), 'pooled vector equals the normalised mean of the chunks');
    assert.ok(!close(whole.embeddings[0], parts.embeddings[0], 1e-3), 'not just the first window (no truncation)');
    assert.equal(whole.prompt_eval_count, chunks.length * 2 + WINDOW * 2 + 20, 'every chunk counted with its special tokens');
  });

  it('an empty input list loads the model and returns no vectors', async () => {
    await h.ollama.generate({ model: 'tiny-llama', prompt: '', keep_alive: 0 });
    const r = await h.ollama.embed({ model: 'tiny-bert-embed', input: [] });
    assert.deepEqual(r.embeddings, []);
    assert.ok((await h.ollama.ps()).models.some((m) => m.name === 'tiny-bert-embed:test'));
  });

  it('dimensions: the first n components renormalised (as /v1 does); more than the model has, or not a positive integer, is 400', async () => {
    const full = await h.ollama.embed({ model: 'tiny-bert-embed', input: ['hello world', 'x'] });
    const cut = await h.ollama.embed({ model: 'tiny-bert-embed', input: ['hello world', 'x'], dimensions: 8 } as never);
    cut.embeddings.forEach((v, i) => {
      assert.equal(v.length, 8);
      assert.ok(Math.abs(norm(v) - 1) < 1e-5);
      const head = full.embeddings[i].slice(0, 8);
      assert.ok(close(v, head.map((x) => x / norm(head))));
    });
    for (const dimensions of [64, 0, 2.5]) {
      assert.equal((await h.post('/api/embed', { model: 'tiny-bert-embed', input: 'x', dimensions })).status, 400);
    }
  });

  it('errors: 404 unknown model, 400 for a chat model', async () => {
    const status = async (body: unknown) => {
      const res = await h.post('/api/embed', body);
      const b = await res.json();
      assert.equal(typeof b.error, 'string');
      return [res.status, b.error] as const;
    };
    assert.equal((await status({ model: 'nope', input: 'x' }))[0], 404);
    const [s1, e1] = await status({ model: 'tiny-llama', input: 'x' });
    assert.equal(s1, 400);
    assert.match(e1, /does not support embeddings/);
  });
});

describe('/api/embeddings (legacy)', () => {
  it('one prompt, one vector (the same as /api/embed gives)', async () => {
    const r = await h.ollama.embeddings({ model: 'tiny-bert-embed', prompt: 'hello world' });
    const e = await h.ollama.embed({ model: 'tiny-bert-embed', input: 'hello world' });
    assert.ok(close(r.embedding, e.embeddings[0]));
  });

  it('an empty prompt returns an empty vector; an unknown model is still 404', async () => {
    assert.deepEqual(await h.ollama.embeddings({ model: 'tiny-bert-embed', prompt: '' }), { embedding: [] });
    const res = await h.post('/api/embeddings', { model: 'nope', prompt: '' });
    assert.equal(res.status, 404);
  });
});
