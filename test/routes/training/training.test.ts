/**
 * Training jobs over HTTP against a listening server (the tiny random BERT fixture as the embedding model):
 * a classifier trained on a generated, well separated labelled set reaches ≥ 0.95 accuracy on its held-out
 * split and on a fresh set it never saw (judged here, through /svc/v1/classify); the model is a custom model
 * (listed, shown, copied, deleted); a CSV written by Python's csv module trains an MLP head; progress per
 * epoch; cancel stops the work within a second; a read-only model directory answers 503
 * model_store_read_only.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TrainClassifierInput } from '../../../src/services/training/training-service.ts';
import { type Harness, startHarness } from '../ollama/harness.ts';
import { listening, tempDir } from '../../support/server.ts';

let h: Harness;
const EMB = 'tiny-bert-embed:test';

// The fixture is a random 2-layer BERT: its mean-pooled embeddings separate texts only by their tokens, so
// each class draws from its own few words of the fixture vocabulary (measured: with eight words per class and
// filler words mixed in, held-out accuracy falls to ~0.76; with three and no filler it is 1.0).
const WORDS: Record<string, string[]> = {
  geo: ['weather', 'celsius', 'paris'],
  code: ['function', 'return', 'string'],
  animal: ['dog', 'fox', 'lazy'],
};

function generate(perLabel: number, seed: number): { text: string; label: string }[] {
  let s = seed;
  const rand = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = (a: string[]) => a[Math.floor(rand() * a.length)];
  const out = [];
  for (let i = 0; i < perLabel; i++) {
    for (const [label, words] of Object.entries(WORDS)) {
      const n = 6 + Math.floor(rand() * 3);
      out.push({ text: Array.from({ length: n }, () => pick(words)).join(' '), label });
    }
  }
  return out;
}

before(async () => {
  h = await startHarness();
});
after(async () => h?.close());

const json = async (res: Response) => {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

async function classifyAccuracy(model: string, set: { text: string; label: string }[]) {
  const res = await h.post('/svc/v1/classify', { model, texts: set.map((e) => e.text) });
  assert.equal(res.status, 200, await res.clone().text());
  const body = await res.json();
  assert.equal(body.results.length, set.length);
  for (const r of body.results) {
    const sum = Object.values(r.scores as Record<string, number>).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 1) < 1e-4, 'scores are probabilities');
    assert.equal(r.score, r.scores[r.label]);
  }
  return body.results.filter((r: { label: string }, i: number) => r.label === set[i].label).length / set.length;
}

describe('classifier training', () => {
  it('logistic head from JSON examples: ≥ 0.95 held-out accuracy, and on a fresh set through classify', async () => {
    const examples = generate(40, 7);
    const res = await h.post('/svc/v1/training/classifier', {
      name: 'topics:v1',
      embedding_model: EMB,
      examples,
      epochs: 60,
      test_split: 0.25,
    });
    const body = await json(res);
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.model, 'topics:v1');
    assert.equal(body.embedding_model, EMB);
    assert.deepEqual(body.labels, ['animal', 'code', 'geo']);
    assert.deepEqual(body.examples, { total: 120, train: 90, held_out: 30 });
    const held = body.metrics.held_out;
    assert.ok(held.accuracy >= 0.95, `held-out accuracy ${held.accuracy}`);
    assert.ok(held.macro_f1 >= 0.9);
    assert.equal(held.per_label.length, 3);
    assert.equal(held.per_label.reduce((a: number, m: { support: number }) => a + m.support, 0), 30);
    // judged independently: texts the training never saw
    assert.ok((await classifyAccuracy('topics:v1', generate(20, 12345))) >= 0.95);
  });

  it('the classifier is a custom model: listed, shown, copied (the copy classifies alike), deleted', async () => {
    const tags = await (await fetch(`${h.srv.url}/api/tags`)).json();
    assert.ok(tags.models.some((m: { name: string }) => m.name === 'topics:v1'));
    const shown = await h.post('/api/show', { model: 'topics:v1' });
    assert.equal(shown.status, 200, await shown.clone().text());
    assert.equal((await h.post('/api/copy', { source: 'topics:v1', destination: 'topics-copy' })).status, 200);
    const fresh = generate(5, 99);
    const a = await (await h.post('/svc/v1/classify', { model: 'topics:v1', texts: fresh.map((e) => e.text) })).json();
    const b = await (await h.post('/svc/v1/classify', { model: 'topics-copy', texts: fresh.map((e) => e.text) })).json();
    assert.deepEqual(b.results, a.results);
    assert.equal(
      (await fetch(`${h.srv.url}/api/delete`, {
        method: 'DELETE',
        body: JSON.stringify({ model: 'topics-copy' }),
        headers: { 'content-type': 'application/json' },
      })).status,
      200,
    );
    const gone = await h.post('/svc/v1/classify', { model: 'topics-copy', text: 'dog' });
    assert.equal(gone.status, 404);
    // an embedding model is not a classifier
    const notOne = await h.post('/svc/v1/classify', { model: EMB, text: 'dog' });
    assert.equal(notOne.status, 400);
  });

  it('MLP head from a CSV file written by Python (quoted fields, commas), sent as multipart', async () => {
    const rows = generate(30, 3).map((e, i) => ({ text: i % 3 ? e.text : `${e.text}, "and" ${e.text.split(' ')[0]}`, topic: e.label }));
    const csv = execFileSync('/usr/bin/python3', [
      '-c',
      [
        'import csv, io, json, sys',
        'rows = json.load(sys.stdin)',
        'out = io.StringIO()',
        'w = csv.DictWriter(out, fieldnames=["topic", "text"])',
        'w.writeheader()',
        'w.writerows(rows)',
        'sys.stdout.write(out.getvalue())',
      ].join('\n'),
    ], { input: JSON.stringify(rows) });
    assert.match(csv.toString(), /"[^"\n]*""and""/); // the quoting of the wild
    const form = new FormData();
    form.set('file', new Blob([csv], { type: 'text/csv' }), 'examples.csv');
    for (
      const [k, v] of Object.entries({
        name: 'topics-mlp',
        embedding_model: EMB,
        label_column: 'topic',
        head: 'mlp',
        hidden: '16',
        epochs: '80',
      })
    ) form.set(k, v);
    const res = await fetch(`${h.srv.url}/svc/v1/training/classifier`, { method: 'POST', body: form });
    const body = await json(res);
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.head.type, 'mlp');
    assert.equal(body.examples.total, 90);
    assert.ok(body.metrics.held_out.accuracy >= 0.95, JSON.stringify(body.metrics));
    assert.ok((await classifyAccuracy('topics-mlp', generate(10, 4242))) >= 0.95);
  });

  it('bad input is a 400 naming it; nothing is created', async () => {
    const cases: [unknown, RegExp][] = [
      [{ name: 'x1', embedding_model: EMB, examples: [{ text: 'a', label: 'p' }, { text: '', label: 'q' }] }, /examples\.1\.text/],
      [{ name: 'x1', embedding_model: EMB, examples: [{ text: 'a', label: 'p' }, { text: 'b', label: 'p' }] }, /two labels/],
      [{ name: 'x1', embedding_model: EMB }, /either as JSON "examples" or as one file/],
      [{ name: 'x1', embedding_model: EMB, examples: generate(2, 1), head: 'svm' }, /head/],
      [{ name: 'x1', embedding_model: 'tiny-llama:test', examples: generate(2, 1) }, /does not support embeddings/],
    ];
    for (const [b, re] of cases) {
      const res = await h.post('/svc/v1/training/classifier', b);
      const body = await res.json();
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(body.message, re);
    }
    const bad = await h.post('/svc/v1/training/classifier', {
      name: 'x1',
      embedding_model: EMB,
      input_format: 'Base64EncodedFile',
      file: Buffer.from('text,label\n"unclosed,a\n').toString('base64'),
      filename: 'e.csv',
    });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).message, /not valid CSV/);
    const tags = await (await fetch(`${h.srv.url}/api/tags`)).json();
    assert.ok(!tags.models.some((m: { name: string }) => m.name.startsWith('x1')));
  });

  it('as a job: progress per epoch, and cancel stops the training within a second', async () => {
    const settled: { at: number; error?: unknown }[] = [];
    const training = h.srv.training;
    const original = training.trainClassifier.bind(training);
    training.trainClassifier = (input: TrainClassifierInput, ctx) => {
      const p = original(input, ctx);
      p.then(() => settled.push({ at: performance.now() }), (error) => settled.push({ at: performance.now(), error }));
      return p;
    };
    try {
      const res = await h.post('/svc/v1/training/classifier', {
        name: 'slow',
        embedding_model: EMB,
        examples: generate(60, 5),
        head: 'mlp',
        hidden: 256,
        epochs: 10_000,
      }, { headers: { 'content-type': 'application/json', prefer: 'respond-async' } });
      assert.equal(res.status, 202);
      const { job_id } = await res.json();
      const poll = async () => (await fetch(`${h.srv.url}/svc/v1/jobs/${job_id}`)).json();
      let job = await poll();
      for (let i = 0; i < 200 && !(job.progress_current >= 2); i++) {
        await new Promise((r) => setTimeout(r, 50));
        job = await poll();
      }
      assert.equal(job.status, 'processing');
      assert.equal(job.progress_total, 10_000);
      assert.ok(job.progress_current >= 2, `progress ${job.progress_current}`);
      // Progress is written as epochs end; on a loaded machine an epoch can take a while, so wait for the next one.
      let later = await poll();
      for (let i = 0; i < 100 && !(later.progress_current > job.progress_current); i++) {
        await new Promise((r) => setTimeout(r, 50));
        later = await poll();
      }
      assert.ok(later.progress_current > job.progress_current, 'progress moves epoch by epoch');
      const cancelledAt = performance.now();
      const del = await fetch(`${h.srv.url}/svc/v1/jobs/${job_id}`, { method: 'DELETE' });
      assert.equal(del.status, 200);
      for (let i = 0; i < 40 && settled.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
      assert.equal(settled.length, 1, 'the training work ended');
      assert.ok(settled[0].error, 'it ended by the cancel, not by finishing');
      assert.ok(settled[0].at - cancelledAt < 1000, `stopped ${Math.round(settled[0].at - cancelledAt)} ms after the cancel`);
      assert.equal((await poll()).status, 'cancelled');
      const tags = await (await fetch(`${h.srv.url}/api/tags`)).json();
      assert.ok(!tags.models.some((m: { name: string }) => m.name.startsWith('slow')), 'no model was stored');
    } finally {
      training.trainClassifier = original;
    }
  });
});

describe('read-only model directory', () => {
  it('training answers 503 model_store_read_only (Retry-After) when there is no work directory', async () => {
    const dataDir = await tempDir();
    const first = await listening({ dataDir });
    await first.stop();
    const modelsDir = join(dataDir, 'models');
    execFileSync('mkdir', ['-p', modelsDir]);
    execFileSync('chattr', ['-R', '+i', modelsDir]); // read-only even for root
    try {
      const srv = await listening({ dataDir });
      try {
        const res = await fetch(`${srv.url}/svc/v1/training/classifier`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'ro', embedding_model: EMB, examples: generate(3, 1) }),
        });
        assert.equal(res.status, 503);
        assert.equal(res.headers.get('retry-after'), '5');
        const body = await res.json();
        assert.equal(body.error, 'model_store_read_only');
      } finally {
        await srv.stop();
      }
    } finally {
      execFileSync('chattr', ['-R', '-i', modelsDir]);
    }
  });
});

describe('device memory refusal', () => {
  /** A server holding one model at most, with tiny-llama resident and busy (a real engine lease). */
  async function busyServer(waitSeconds: number) {
    const hs = await startHarness({ maxLoadedModels: 1, trainingMemoryWaitSeconds: waitSeconds });
    const llama = await hs.srv.chat.resolve('tiny-llama:test', 'generation');
    const lease = await hs.srv.engine.residency.acquire(llama.engineSpec);
    // the refusal the engine gives any other caller now: immediate 503
    const direct = await hs.post('/api/embed', { model: EMB, input: 'dog' });
    assert.equal(direct.status, 503);
    assert.match((await direct.json()).error, /memory pressure/);
    return { hs, lease };
  }
  const trainBody = { name: 'waited', embedding_model: EMB, examples: generate(10, 2), epochs: 5 };

  it('training waits while the engine refuses for memory, and runs once memory is free', async () => {
    const { hs, lease } = await busyServer(600);
    try {
      const res = await hs.post('/svc/v1/training/classifier', trainBody, {
        headers: { 'content-type': 'application/json', prefer: 'respond-async' },
      });
      assert.equal(res.status, 202);
      const { job_id } = await res.json();
      await new Promise((r) => setTimeout(r, 1500));
      const poll = async () => (await fetch(`${hs.srv.url}/svc/v1/jobs/${job_id}`)).json();
      assert.equal((await poll()).status, 'processing', 'still waiting, not failed');
      lease.release();
      let job = await poll();
      for (let i = 0; i < 200 && job.status === 'processing'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        job = await poll();
      }
      assert.equal(job.status, 'completed', JSON.stringify(job));
      assert.equal(job.result.model, 'waited:latest');
    } finally {
      lease.release();
      await hs.close();
    }
  });

  it('past the wait limit the refusal is the answer (503 with Retry-After)', async () => {
    const { hs, lease } = await busyServer(1);
    try {
      const t0 = performance.now();
      const res = await hs.post('/svc/v1/training/classifier', trainBody);
      const waited = performance.now() - t0;
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
      assert.equal((await res.json()).error, 'service_unavailable');
      assert.ok(waited >= 1000 && waited < 4000, `answered after ${Math.round(waited)} ms`);
    } finally {
      lease.release();
      await hs.close();
    }
  });
});
