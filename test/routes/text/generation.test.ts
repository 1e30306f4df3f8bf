/**
 * Chat-model text tasks on the tiny fixture model (hub stand-in), steered where an exact answer is
 * needed: summarization of a generated 100-page PDF by map-reduce with job progress, translation keeping
 * headings, lists, code and tables, correction edits as spans, extraction validated by ajv, categorize
 * through constrained output and embedding zero-shot, and the 400s for unknown languages and label sets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import type { ChatRequest } from '../../../src/services/chat/index.ts';
import { forceTokens, type Harness, startHarness, tinyLlamaIds } from '../ollama/harness.ts';
import { hundredPagePdf } from './harbour-report.ts';

let h: Harness;
const MODEL = 'tiny-llama:test';
const ajv = new Ajv({ strict: false });
let calls: ChatRequest[] = [];

before(async () => {
  h = await startHarness();
  const chat = h.srv.chat.chat.bind(h.srv.chat);
  h.srv.chat.chat = (req: ChatRequest) => {
    calls.push(req);
    return chat(req);
  };
});
after(async () => {
  h.steer(undefined);
  await h?.close();
});

const say = async (text: string) => {
  const ids = await tinyLlamaIds(text);
  h.steer(() => [forceTokens(ids)]);
};
const body = async (res: Response) => ({ status: res.status, body: await res.json() as any });

async function pollJob(location: string) {
  for (let i = 0; i < 1200; i++) {
    const job = await (await fetch(`${h.srv.url}${location}`)).json() as any;
    if (job.status !== 'processing') return job;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('job did not finish');
}

describe('summarize', () => {
  it('a 100-page PDF: map-reduce over chunks, one map call per chunk, progress to the end', async () => {
    await say('ok.');
    calls = [];
    const pdf = await hundredPagePdf();
    const res = await h.post('/svc/v1/summarize', {
      model: MODEL,
      file: Buffer.from(pdf).toString('base64'),
      filename: 'report.pdf',
      chunk_tokens: 60,
      length: 'short',
    }, { headers: { 'content-type': 'application/json', prefer: 'respond-async' } });
    assert.equal(res.status, 202);
    const job = await pollJob(res.headers.get('location')!);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    const r = job.result;
    assert.equal(r.method, 'map-reduce');
    assert.equal(r.source.format, 'pdf');
    assert.equal(r.source.pages, 100);
    assert.ok(r.chunks >= 10, `chunks ${r.chunks}`);
    assert.equal(r.calls, calls.length, 'every call is counted');
    assert.ok(r.calls >= r.chunks + 1, 'map calls, then at least one reduce');
    if (r.reduce_levels === 1) assert.equal(r.calls, r.chunks + 1);
    assert.equal(r.summary, 'ok.');
    assert.equal(job.progress_current, r.calls);
    assert.equal(job.progress_total, r.calls);
    // every page's text went to some map call: nothing truncated
    const mapped = calls.slice(0, r.chunks).map((c) => c.messages.at(-1)!.content).join('\n');
    for (const p of [1, 37, 100]) assert.ok(mapped.includes(`shipped ${p * 7} crates`), `page ${p} summarised`);
    // the final call combines the partial summaries
    assert.match(calls.at(-1)!.messages.at(-1)!.content!, /Part 1:\nok\./);
    h.steer(undefined);
  });

  it('a short text is one call; bullets format asked in the prompt', async () => {
    await say('- one point');
    calls = [];
    const r = await body(
      await h.post('/svc/v1/summarize', { model: MODEL, text: 'The council approved the new bridge on Monday.', format: 'bullets' }),
    );
    assert.equal(r.status, 200);
    assert.equal(r.body.method, 'single-pass');
    assert.equal(r.body.summary, '- one point');
    assert.equal(calls.length, 1);
    assert.match(calls[0]!.messages[0]!.content!, /bullet/);
    h.steer(undefined);
  });
});

describe('translate', () => {
  const MD =
    '# Greetings\n\nA short *paragraph* with `code` and [a link](https://example.com/x).\n\n- first item\n- second item\n  1. nested\n\n```js\nconst keep = "me";\n```\n\n| Name | City |\n|---|---|\n| Anna | Paris |\n';
  it('keeps headings, lists, code blocks and table structure', async () => {
    await say('Hallo');
    const r = await body(await h.post('/svc/v1/translate', { model: MODEL, text: MD, target_language: 'de', source_language: 'en' }));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(
      r.body.translation,
      '# Hallo\n\nHallo\n\n- Hallo\n- Hallo\n  1. Hallo\n\n```js\nconst keep = "me";\n```\n\n| Hallo | Hallo |\n|---|---|\n| Hallo | Hallo |\n',
    );
    assert.equal(r.body.target_language, 'de');
    assert.equal(r.body.segments, 9);
    h.steer(undefined);
  });

  it('detects the source; unknown languages are 400 before any work', async () => {
    await say('Bonjour');
    calls = [];
    const r = await body(
      await h.post('/svc/v1/translate', {
        model: MODEL,
        text: 'Good morning, how are you doing today, my dear friend?',
        target_language: 'fr',
      }),
    );
    assert.equal(r.body.translation, 'Bonjour');
    assert.equal(r.body.source_language, 'en');
    assert.equal(r.body.detected_source_language.language, 'en');
    h.steer(undefined);
    calls = [];
    for (const b of [{ target_language: 'xx' }, { target_language: 'de', source_language: 'klingonese' }, {}]) {
      const bad = await body(await h.post('/svc/v1/translate', { model: MODEL, text: 'hello', ...b }));
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
    }
    assert.equal(calls.length, 0);
  });
});

describe('correct and rewrite', () => {
  it('edits are spans of the original', async () => {
    await say('I have an apple and it is red.');
    const text = 'I has an apple and it are red.';
    const r = await body(await h.post('/svc/v1/correct', { model: MODEL, text }));
    assert.equal(r.body.corrected_text, 'I have an apple and it is red.');
    assert.deepEqual(r.body.edits, [
      { start: 2, end: 5, original: 'has', replacement: 'have', type: 'replace' },
      { start: 22, end: 25, original: 'are', replacement: 'is', type: 'replace' },
    ]);
    for (const e of r.body.edits) assert.equal(text.slice(e.start, e.end), e.original);
    h.steer(undefined);
  });

  it('rewrite passes tone and audience to the model and returns its text', async () => {
    await say('Hey there!');
    calls = [];
    const r = await body(
      await h.post('/svc/v1/rewrite', {
        model: MODEL,
        text: 'Dear Sir, greetings.',
        tone: 'casual',
        audience: 'teenagers',
        length: 'shorter',
      }),
    );
    assert.equal(r.body.text, 'Hey there!');
    assert.match(calls[0]!.messages[0]!.content!, /casual.*teenagers.*shorter/s);
    h.steer(undefined);
  });
});

describe('extract, categorize, sentiment with a model', () => {
  const SCHEMA = {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'total', 'paid', 'items'],
    properties: {
      name: { type: 'string', maxLength: 20 },
      total: { type: 'number' },
      paid: { type: 'boolean' },
      items: { type: 'array', items: { type: 'string', maxLength: 10 }, maxItems: 3 },
    },
  };
  it("extraction output always validates against the caller's schema (random model)", async () => {
    const validate = ajv.compile(SCHEMA);
    for (const text of ['Invoice for Anna: 3 apples, total 4.50, paid.', 'Bob owes 12 for pears.']) {
      const r = await body(await h.post('/svc/v1/extract', { model: MODEL, text, schema: SCHEMA }));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok(validate(r.body.data), JSON.stringify(validate.errors));
      assert.match(r.body.method, /constrained/);
    }
    const bad = await body(
      await h.post('/svc/v1/extract', { model: MODEL, text: 'x', schema: { type: 'object', patternProperties: { a: {} } } }),
    );
    assert.equal(bad.status, 400);
  });

  it('categorize: constrained chat picks one of the labels; 400 for a bad label set', async () => {
    const labels = ['sports', 'politics', 'science'];
    const r = await body(await h.post('/svc/v1/categorize', { model: MODEL, text: 'The team won the cup.', labels }));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(labels.includes(r.body.label));
    const multi = await body(
      await h.post('/svc/v1/categorize', { model: MODEL, text: 'The team won the cup.', labels, multi_label: true }),
    );
    assert.ok(multi.body.labels.length >= 1 && multi.body.labels.every((l: any) => labels.includes(l.label)));
    for (const bad of [['only'], ['a', 'a'], ['a', ' '], undefined]) {
      const res = await body(await h.post('/svc/v1/categorize', { model: MODEL, text: 'x', labels: bad }));
      assert.equal(res.status, 400, JSON.stringify(bad));
    }
  });

  it('categorize through an embedding model: scores sum to 1 over the labels', async () => {
    const r = await body(
      await h.post('/svc/v1/categorize', { model: 'tiny-bert-embed:test', text: 'The team won the cup.', labels: ['sports', 'politics'] }),
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.method, /embedding/);
    const sum = r.body.labels.reduce((s: number, l: any) => s + l.score, 0);
    assert.ok(Math.abs(sum - 1) < 1e-3);
    assert.equal(r.body.label, r.body.labels[0].label);
  });

  it('sentiment with a model: one label per sentence, from the allowed set', async () => {
    const r = await body(await h.post('/svc/v1/sentiment', { model: MODEL, text: 'Great food. Awful service. Fine.' }));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.sentences.length, 3);
    for (const s of r.body.sentences) assert.ok(['positive', 'negative', 'neutral'].includes(s.label));
    assert.equal(r.body.model, MODEL);
  });
});
