import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { inProcess, listening } from '../support/server.ts';

type Srv = Awaited<ReturnType<typeof listening>>;

// Stored files at any depth (a fleet node keeps task inputs under .inputs/<node tag>/), uploads in progress excluded.
const uploadFiles = async (dir: string) =>
  (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile() && !relative(dir, e.parentPath).split(sep).includes('.partial')).map((e) => e.name);
// Files only: a fleet node keeps its uploads in progress under .partial/<node tag>/.
const partials = async (dir: string) =>
  (await readdir(join(dir, '.partial'), { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name);

function multipart(fields: Record<string, string>, file?: { name: string; type: string; data: Uint8Array }) {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  if (file) fd.append('file', new Blob([file.data as Uint8Array<ArrayBuffer>], { type: file.type }), file.name);
  return fd;
}

describe('uploads', () => {
  let srv: Srv;
  before(async () => {
    srv = await listening();
  });
  after(() => srv.stop());

  test('native upload returns a fileId; metadata and content round-trip', async () => {
    const data = new TextEncoder().encode('%PDF-1.7 hello');
    const r = await fetch(`${srv.url}/svc/v1/files/upload`, {
      method: 'POST',
      body: multipart({}, { name: 'a.pdf', type: 'application/pdf', data }),
    });
    assert.equal(r.status, 200);
    const f = await r.json();
    assert.match(f.fileId, /^file-/);
    assert.equal(f.bytes, data.length);
    assert.equal(f.filename, 'a.pdf');
    const meta = await (await fetch(`${srv.url}/svc/v1/files/${f.fileId}`)).json();
    assert.equal(meta.content_type, 'application/pdf');
    assert.equal(await (await fetch(`${srv.url}/svc/v1/files/${f.fileId}/content`)).text(), '%PDF-1.7 hello');
  });

  test('POST /v1/files and GET /v1/files/{id} in the OpenAI shape', async () => {
    const r = await fetch(`${srv.url}/v1/files`, {
      method: 'POST',
      body: multipart({ purpose: 'assistants' }, { name: 'notes.txt', type: 'text/plain', data: new TextEncoder().encode('abc') }),
    });
    assert.equal(r.status, 200);
    const f = await r.json();
    assert.equal(f.object, 'file');
    assert.equal(f.purpose, 'assistants');
    assert.equal(f.bytes, 3);
    assert.equal(typeof f.created_at, 'number');
    const g = await (await fetch(`${srv.url}/v1/files/${f.id}`)).json();
    assert.deepEqual(g, f);
    const missing = await fetch(`${srv.url}/v1/files/file-unknown`);
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).error.type, 'invalid_request_error');
    const noPurpose = await fetch(`${srv.url}/v1/files`, {
      method: 'POST',
      body: multipart({}, { name: 'x', type: 'text/plain', data: new Uint8Array(3) }),
    });
    assert.equal(noPurpose.status, 400);
  });

  test('a 150 MB chunked upload (no Content-Length) is counted as it streams: 413, memory flat, nothing left behind', async () => {
    // Without Content-Length nothing can be refused at the door: the server must count while it reads.
    const small = await listening({ maxUploadBytes: 100 * 1024 * 1024 });
    try {
      const before = await uploadFiles(small.files.dir);
      const rssBefore = process.memoryUsage().rss;
      let peak = rssBefore;
      const sample = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss);
      }, 20);
      const total = 150 * 1024 * 1024;
      const chunk = new Uint8Array(1024 * 1024).fill(0x61);
      const boundary = 'XYZ';
      let sent = 0;
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${small.url}/svc/v1/files/upload`, {
          method: 'POST',
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', () => {}); // the server may close the socket once it answered
        let closed = false;
        req.on('close', () => {
          closed = true;
        });
        req.write(
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        );
        const pump = () => {
          while (sent < total && !closed) {
            sent += chunk.length;
            if (!req.write(chunk)) return req.once('drain', pump);
          }
          if (!closed) req.end(`\r\n--${boundary}--\r\n`);
        };
        pump();
        setTimeout(() => reject(new Error('no answer')), 120_000).unref();
      });
      clearInterval(sample);
      assert.equal(status, 413);
      assert.ok(sent > 100 * 1024 * 1024, `the body streamed past the limit before the answer (${sent} bytes sent)`);
      const grown = (peak - rssBefore) / 1024 / 1024;
      assert.ok(grown < 60, `peak RSS grew by ${grown.toFixed(1)} MB for a ${total / 1024 / 1024} MB body`);
      assert.deepEqual(await uploadFiles(small.files.dir), before);
      assert.deepEqual(await partials(small.files.dir).catch(() => []), []);
    } finally {
      await small.stop();
    }
  });

  test('a chunked body without Content-Length is counted while streaming: 413, nothing left behind', async () => {
    const small = await listening({ maxUploadBytes: 2 * 1024 * 1024 });
    try {
      const before = await uploadFiles(small.files.dir);
      const boundary = 'BOUNDARY123';
      const head = new TextEncoder().encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      );
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(ctrl) {
          if (n === 0) ctrl.enqueue(head);
          else if (n < 10) ctrl.enqueue(new Uint8Array(512 * 1024));
          else ctrl.close();
          n++;
        },
      });
      const r = await fetch(`${small.url}/svc/v1/files/upload`, {
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        body,
        duplex: 'half',
      } as RequestInit);
      assert.equal(r.status, 413);
      assert.deepEqual(await uploadFiles(small.files.dir), before);
      assert.deepEqual(await partials(small.files.dir), []);
      assert.equal((await small.store.db.selectFrom('files').selectAll().execute()).length, 0);
    } finally {
      await small.stop();
    }
  });

  test('an interrupted upload leaves no file behind', async () => {
    const before = await uploadFiles(srv.files.dir);
    const rowsBefore = (await srv.store.db.selectFrom('files').selectAll().execute()).length;
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${srv.url}/svc/v1/files/upload`, {
        method: 'POST',
        headers: { 'content-type': 'multipart/form-data; boundary=B', 'content-length': String(10 * 1024 * 1024) },
      });
      req.on('error', () => resolve());
      req.write('--B\r\nContent-Disposition: form-data; name="file"; filename="half.bin"\r\n\r\n');
      req.write(new Uint8Array(2 * 1024 * 1024));
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 200);
    });
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 50));
      if ((await partials(srv.files.dir)).length === 0) break;
    }
    assert.deepEqual(await uploadFiles(srv.files.dir), before);
    assert.deepEqual(await partials(srv.files.dir), []);
    assert.equal((await srv.store.db.selectFrom('files').selectAll().execute()).length, rowsBefore);
  });
});

test('uploaded files expire after the retention: 404 afterwards and the bytes are removed', async () => {
  const t = await inProcess({ fileRetentionSeconds: 1 });
  try {
    const fd = new FormData();
    fd.append('file', new Blob(['abc']), 'x.txt');
    const f = await (await t.request('/svc/v1/files/upload', { method: 'POST', body: fd })).json();
    assert.equal((await t.request(`/svc/v1/files/${f.fileId}`)).status, 200);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await t.request(`/svc/v1/files/${f.fileId}`)).status, 404);
    assert.equal((await t.request(`/v1/files/${f.fileId}`)).status, 404);
    await t.s.files.sweep();
    assert.deepEqual(await uploadFiles(t.s.files.dir), []);
  } finally {
    await t.close();
  }
});

test('files are private to the uploading key', async () => {
  const t = await inProcess();
  try {
    const a = await (await t.request('/svc/v1/admin/keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"a"}',
    })).json();
    const b = await (await t.request('/svc/v1/admin/keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}` },
      body: '{"name":"b","role":"user"}',
    })).json();
    const fd = new FormData();
    fd.append('file', new Blob(['mine']), 'm.txt');
    const f = await (await t.request('/svc/v1/files/upload', { method: 'POST', body: fd, headers: { authorization: `Bearer ${a.token}` } }))
      .json();
    assert.equal((await t.request(`/svc/v1/files/${f.fileId}`, { headers: { authorization: `Bearer ${a.token}` } })).status, 200);
    assert.equal((await t.request(`/svc/v1/files/${f.fileId}`, { headers: { authorization: `Bearer ${b.token}` } })).status, 404);
    assert.equal((await t.request(`/v1/files/${f.fileId}/content`, { headers: { authorization: `Bearer ${b.token}` } })).status, 404);
  } finally {
    await t.close();
  }
});
