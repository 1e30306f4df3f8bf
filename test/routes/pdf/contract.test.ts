/** The PDF routes on the job contract: respond-async jobs, file results, 413 at the door. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type InProcess, inProcess, json } from '../../support/server.ts';
import { inProcessSuite } from '../../support/in-process-suite.ts';
import { assertQpdfCheck, makePdf, pdftotext } from '../../services/pdf/helpers.ts';
import { asJob, b64, base64Json, expectReason, fileContent, multipart, pdfOf, upload } from './http.ts';

describe('pdf routes on the job contract', () => {
  let t: InProcess;
  let a: Uint8Array, b: Uint8Array;
  before(async () => {
    t = await inProcess();
    [a, b] = await Promise.all([makePdf(2, { lines: () => ['first doc'] }), makePdf(3, { lines: () => ['second doc'] })]);
  });
  after(() => t.close());

  test('Prefer: respond-async: 202, then the poll result carries the file id of the same bytes the synchronous call returns', async () => {
    const sync = await pdfOf(await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a, name: 'a.pdf' }, { bytes: b }])));
    const rec = await asJob(t, '/svc/v1/pdf-merge', multipart([{ bytes: a, name: 'a.pdf' }, { bytes: b }]));
    assert.equal(rec.status, 'completed', JSON.stringify(rec));
    assert.equal(rec.result.content_type, 'application/pdf');
    assert.equal(rec.result.filename, 'a-merged.pdf');
    assert.equal(rec.progress_current, 2);
    assert.equal(rec.progress_total, 2);
    const stored = await fileContent(t, rec.result.file_id);
    assert.equal(stored.bytes.byteLength, rec.result.bytes);
    assert.deepEqual(stored.bytes, sync, 'the job wrote the bytes the synchronous call answers');
    assertQpdfCheck(stored.bytes);
  });

  test('a job with delivery file_id: the result is the JSON the synchronous call answers (a list for several outputs)', async () => {
    const id = await upload(t, b);
    const rec = await asJob(t, '/svc/v1/pdf-split', json({ file_id: id, delivery: 'file_id' }));
    assert.equal(rec.status, 'completed');
    assert.equal(rec.progress_total, 3);
    assert.equal(rec.result.files.length, 3);
    for (const f of rec.result.files) {
      const part = (await fileContent(t, f.file_id)).bytes;
      assertQpdfCheck(part);
      assert.match(pdftotext(part), /second doc/);
    }
    const info = await asJob(t, '/svc/v1/pdf-info', json({ file_id: id }));
    assert.equal(info.result.page_count, 3);
    assert.equal(info.progress_current, 3);
  });

  test('the input files a request sent are removed once the work is over, also after a refusal', async () => {
    const countFiles = async () =>
      Number((await t.s.store.db.selectFrom('files').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const before = await countFiles();
    await pdfOf(await t.request('/svc/v1/pdf-watermark', base64Json(a, { text: 'X' })));
    await pdfOf(await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a }, { bytes: b }])));
    await expectReason(await t.request('/svc/v1/pdf-info', multipart([{ bytes: new Uint8Array(10) }])), 415, 'unsupported_file_type');
    assert.equal(await countFiles(), before);
  });

  test('a non-ASCII file name is kept: RFC 6266 filename* for inline answers, UTF-8 multipart names', async () => {
    const viaJson = await t.request('/svc/v1/pdf-merge', json({ file: b64(a), filename: 'отчёт "Q3".pdf' }));
    await pdfOf(viaJson.clone());
    assert.equal(
      viaJson.headers.get('content-disposition'),
      `attachment; filename="_____ _Q3_-merged.pdf"; filename*=UTF-8''${encodeURIComponent('отчёт _Q3_-merged.pdf')}`,
    );
    const viaForm = await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a, name: 'Überblick.pdf' }]));
    assert.match(viaForm.headers.get('content-disposition')!, /filename\*=UTF-8''%C3%9Cberblick-merged\.pdf$/);
  });

  test('more file parts than multipart admits (100) is a 400, never a silently shorter merge', async () => {
    const many = Array.from({ length: 101 }, () => ({ bytes: a }));
    await expectReason(await t.request('/svc/v1/pdf-merge', multipart(many)), 400, 'invalid_request');
  });
});

describe('pdf routes: over the maximum request size', () => {
  let t: InProcess;
  inProcessSuite((x) => (t = x), { maxUploadBytes: 64 * 1024 });

  test('413 at the door for multipart and base64 JSON, also with Prefer: respond-async', async () => {
    const big = await makePdf(1, { lines: () => Array.from({ length: 30 }, (_, i) => `${i} ${'x'.repeat(60)}`) });
    const padded = new Uint8Array(100 * 1024);
    padded.set(big);
    await expectReason(await t.request('/svc/v1/pdf-info', multipart([{ bytes: padded }])), 413, 'request_too_large');
    await expectReason(await t.request('/svc/v1/pdf-merge', json({ files: [b64(padded), b64(padded)] })), 413, 'request_too_large');
    await expectReason(
      await t.request('/svc/v1/pdf-info', { ...multipart([{ bytes: padded }]), headers: { prefer: 'respond-async' } }),
      413,
      'request_too_large',
    );
  });
});
