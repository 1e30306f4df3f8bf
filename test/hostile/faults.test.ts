/**
 * The smaller faults an attacker (or an unlucky client) hits, each through HTTP: keys off loopback,
 * prompt size refused before tokenization, deep schemas, invalid stored parameters, Prefer: respond-async
 * on document routes, a stream the client leaves, inline inputs a killed process leaves behind.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { inProcess, json, tempDir } from '../support/server.ts';
import { type Harness, startHarness } from '../routes/ollama/harness.ts';
import { start } from '../support/runtime-process.ts';
import type { Logger } from '../../src/log.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const MODEL = 'tiny-llama:test';
const deep = (n: number) => {
  let s: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < n; i++) s = { type: 'object', properties: { a: s } };
  return s;
};

describe('keys off loopback', () => {
  it('a server on 0.0.0.0 with no key requires one; /health stays open', async () => {
    const t = await inProcess({ host: '0.0.0.0' });
    try {
      assert.equal((await t.request('/health')).status, 200);
      assert.equal((await t.request('/api/tags')).status, 401);
      assert.equal((await t.request('/svc/v1/admin/keys')).status, 401);
      assert.equal((await t.request('/v1/models')).status, 401);
    } finally {
      await t.close();
    }
  });

  it('with --allow-anonymous-remote, anonymous callers work but are never admins', async () => {
    const t = await inProcess({ host: '0.0.0.0', allowAnonymousRemote: true });
    try {
      assert.equal((await t.request('/api/tags')).status, 200);
      assert.equal((await t.request('/svc/v1/admin/keys')).status, 403);
    } finally {
      await t.close();
    }
  });

  it('on loopback (127.0.0.1, ::1, localhost) a fresh server stays open, as before', async () => {
    for (const host of ['127.0.0.1', '::1', 'localhost', '127.1.2.3']) {
      const t = await inProcess({ host });
      try {
        assert.equal((await t.request('/svc/v1/admin/keys')).status, 200, host);
      } finally {
        await t.close();
      }
    }
  });
});

describe('inference inputs', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => h?.close());

  it('a 3-million-character prompt is 413 input_too_large at once, before tokenization', async () => {
    const big = 'word '.repeat(600_000);
    for (
      const [path, body] of [
        ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: big }], max_tokens: 1 }],
        ['/api/chat', { model: MODEL, messages: [{ role: 'user', content: big }], stream: false }],
        ['/v1/completions', { model: MODEL, prompt: big, max_tokens: 1 }],
      ] as const
    ) {
      const t = performance.now();
      const r = await fetch(`${h.srv.url}${path}`, json(body));
      const took = performance.now() - t;
      assert.equal(r.status, 413, `${path}: ${await r.clone().text()}`);
      assert.match(await r.text(), /input_too_large|max-prompt-chars/);
      assert.ok(took < 3000, `${path} took ${took.toFixed(0)} ms`);
    }
  });

  it('a schema nested 2000 levels is 422 json_too_deep on response_format, format and tool parameters', async () => {
    const schema = deep(2000);
    const cases: [string, unknown][] = [
      ['/v1/chat/completions', {
        model: MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
      }],
      ['/v1/chat/completions', {
        model: MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: schema } }],
        tool_choice: 'required',
      }],
      ['/api/chat', { model: MODEL, messages: [{ role: 'user', content: 'hi' }], format: schema, stream: false }],
    ];
    for (const [path, body] of cases) {
      const r = await fetch(`${h.srv.url}${path}`, json(body));
      const text = await r.text();
      assert.equal(r.status, 422, `${path}: ${text.slice(0, 300)}`);
      assert.match(text, /max-json-depth/);
    }
    // a modest schema still works
    const ok = await fetch(
      `${h.srv.url}/api/chat`,
      json({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], format: deep(3), stream: false, options: { num_predict: 4 } }),
    );
    assert.equal(ok.status, 200, await ok.clone().text());
  });

  it('/api/create refuses parameters a model could never serve with, and stores nothing', async () => {
    const r = await fetch(`${h.srv.url}/api/create`, json({ model: 'broken-stop', from: MODEL, parameters: { stop: 5 }, stream: false }));
    assert.equal(r.status, 400);
    assert.match((await r.json()).error, /parameters\.stop/);
    const tags = await (await fetch(`${h.srv.url}/api/tags`)).json();
    assert.ok(!tags.models.some((m: { name: string }) => m.name.startsWith('broken-stop')));
  });

  it('a client that leaves a stream is logged 499, with no ERROR', async () => {
    const lines: string[] = [];
    const errors: string[] = [];
    const log = h.srv.log as Logger & { level: string };
    const { access, error, level } = log;
    log.level = 'info';
    log.access = (method, url, status) => lines.push(`${method} ${url} ${status} `);
    log.error = (m) => errors.push(m);
    try {
      const ac = new AbortController();
      const res = await fetch(`${h.srv.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        signal: ac.signal,
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: 'user', content: 'long' }],
          max_tokens: 400,
          stream: true,
          temperature: 1,
        }),
      });
      await res.body!.getReader().read();
      ac.abort();
      for (let i = 0; i < 100 && !lines.some((l) => l.includes('/v1/chat/completions')); i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 100));
      const line = lines.find((l) => l.includes('/v1/chat/completions'));
      assert.match(line ?? '(none)', / 499 /);
      assert.deepEqual(errors, []);
    } finally {
      Object.assign(log, { access, error, level });
    }
  });
});

describe('document routes', () => {
  it("Prefer: respond-async answers 202 before detection; the 415 is the job's outcome", async () => {
    const t = await inProcess();
    try {
      const ps = Buffer.from('%!PS-Adobe-3.0\nshowpage\n').toString('base64');
      for (const route of ['ocr', 'document-to-markdown', 'document-parsing']) {
        const r = await t.request(`/svc/v1/${route}`, json({ input_format: 'Base64EncodedFile', file: ps }, { prefer: 'respond-async' }));
        assert.equal(r.status, 202, route);
        const { job_id } = await r.json();
        let job;
        for (let i = 0; i < 100; i++) {
          job = await (await t.request(`/svc/v1/jobs/${job_id}`)).json();
          if (job.status !== 'processing') break;
          await new Promise((res) => setTimeout(res, 50));
        }
        assert.equal(job.status, 'failed', JSON.stringify(job));
        assert.equal(job.error_code, 415);
        assert.equal(job.error_reason, 'unsupported_file_type');
        // synchronously, the same cause gives the same answer
        const s = await t.request(`/svc/v1/${route}`, json({ input_format: 'Base64EncodedFile', file: ps }));
        assert.equal(s.status, 415);
      }
    } finally {
      await t.close();
    }
  });
});

describe('page limit', () => {
  it('a document over --max-pages is 422 too_many_pages on pdf-lib and PDFium paths alike', async () => {
    const t = await inProcess({ maxPages: 3 });
    try {
      const doc = await PDFDocument.create();
      for (let i = 0; i < 5; i++) doc.addPage([200, 200]);
      const file = Buffer.from(await doc.save()).toString('base64');
      for (const route of ['pdf-info', 'pdf-to-images', 'pdf-search']) {
        const r = await t.request(`/svc/v1/${route}`, json({ input_format: 'Base64EncodedFile', file, query: 'x' }));
        const e = await r.json();
        assert.equal(r.status, 422, `${route}: ${JSON.stringify(e)}`);
        assert.equal(e.error, 'too_many_pages');
        assert.match(e.message, /max-pages/);
      }
    } finally {
      await t.close();
    }
  });
});

describe('a killed server', () => {
  it('inline inputs of its running tasks are removed when it starts again', async () => {
    const doc = await PDFDocument.create();
    const font = await doc.embedFont(StandardFonts.Helvetica);
    for (let i = 0; i < 6; i++) doc.addPage([612, 792]).drawText(`Page ${i} with some words to read`, { x: 50, y: 700, size: 24, font });
    const pdf = Buffer.from(await doc.save()).toString('base64');
    const dataDir = await tempDir();
    const uploads = join(dataDir, 'uploads');
    const files = async () => (await readdir(uploads)).filter((n) => !n.startsWith('.'));
    const cmd = (): [
      string,
      string[],
    ] => [process.execPath, ['--import', 'tsx', join(ROOT, 'src/main.ts'), '--port', '0', '--data-dir', dataDir]];
    const first = await start(...cmd());
    const r = await fetch(
      `${first.url}/svc/v1/ocr`,
      json({ input_format: 'Base64EncodedFile', file: pdf, dpi: 600 }, { prefer: 'respond-async' }),
    );
    assert.equal(r.status, 202);
    assert.equal((await files()).length, 1, 'the inline input is on disk while the job runs');
    const exited = new Promise((res) => first.child.once('exit', res));
    process.kill(-first.child.pid!, 'SIGKILL');
    await exited;
    assert.equal((await files()).length, 1, 'a kill leaves it behind');
    const second = await start(...cmd());
    try {
      assert.deepEqual(await files(), []);
    } finally {
      await second.stop();
    }
  });
});
