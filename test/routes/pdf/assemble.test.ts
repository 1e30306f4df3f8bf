/** pdf-merge, pdf-split, pdf-edit through HTTP; qpdf checks every PDF, pdftotext/pdfinfo read them back. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PDFDocument, PDFName, PDFString } from '@cantoo/pdf-lib';
import { type InProcess, inProcess } from '../../support/server.ts';
import { assertQpdfCheck, encrypt, makePdf, pageCount, pdfinfo, pdftotext, tool, writeTmp } from '../../services/pdf/helpers.ts';
import { base64Json, expectReason, expectReasonBoth, fileContent, fileIdJson, jsonOf, multipart, pdfOf, upload, zipOf } from './http.ts';

const pagesSaid = (bytes: Uint8Array) => [...pdftotext(bytes).matchAll(/(\w+) page (\d+)/g)].map((m) => `${m[1]}${m[2]}`);

describe('pdf assemble routes', () => {
  let t: InProcess;
  let a: Uint8Array, b: Uint8Array, c: Uint8Array;
  before(async () => {
    t = await inProcess();
    const doc = (tag: string, n: number) => makePdf(n, { lines: (p) => [`${tag} page ${p}`] });
    [a, b, c] = await Promise.all([doc('alpha', 3), doc('beta', 2), doc('gamma', 4)]);
  });
  after(() => t.close());

  test('pdf-merge: repeated multipart "file" parts in order, page ranges per input', async () => {
    const merged = await pdfOf(
      await t.request(
        '/svc/v1/pdf-merge',
        multipart([{ bytes: a }, { bytes: b }, { bytes: c }], { ranges: JSON.stringify(['2-3', null, 'last']) }),
      ),
    );
    assert.deepEqual(pagesSaid(merged), ['alpha2', 'alpha3', 'beta1', 'beta2', 'gamma4']);
    const all = await pdfOf(await t.request('/svc/v1/pdf-merge', multipart([{ bytes: c }, { bytes: a }])));
    assert.equal(pageCount(all), 7);
    assert.deepEqual(pagesSaid(all).slice(3, 5), ['gamma4', 'alpha1']);
  });

  test('pdf-merge: base64 files list and file ids; delivery file_id stores the PDF as a new file; inputs untouched', async () => {
    const viaB64 = await pdfOf(
      await t.request('/svc/v1/pdf-merge', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          input_format: 'Base64EncodedFile',
          files: [{ file: Buffer.from(b).toString('base64') }, { file: Buffer.from(a).toString('base64') }],
        }),
      }),
    );
    assert.deepEqual(pagesSaid(viaB64), ['beta1', 'beta2', 'alpha1', 'alpha2', 'alpha3']);
    const ids = [await upload(t, a, 'alpha.pdf'), await upload(t, b, 'beta.pdf')];
    const out = await jsonOf(await t.request('/svc/v1/pdf-merge', fileIdJson(ids, { delivery: 'file_id' })));
    assert.match(out.file_id, /^file-/);
    assert.equal(out.filename, 'alpha-merged.pdf');
    assert.equal(out.content_type, 'application/pdf');
    const stored = await fileContent(t, out.file_id);
    assert.equal(stored.bytes.byteLength, out.bytes);
    assert.equal(stored.contentType, 'application/pdf');
    assertQpdfCheck(stored.bytes);
    assert.deepEqual(pagesSaid(stored.bytes), ['alpha1', 'alpha2', 'alpha3', 'beta1', 'beta2']);
    assert.deepEqual((await fileContent(t, ids[0]!)).bytes, a, 'input file unchanged');
    assert.deepEqual((await fileContent(t, ids[1]!)).bytes, b, 'input file unchanged');
  });

  test('pdf-merge: encrypted inputs need their passwords; a bad range is 400; a non-PDF among them 415', async () => {
    const locked = encrypt(b, 'pw-b', 'own', 128);
    await expectReasonBoth(t, '/svc/v1/pdf-merge', () => multipart([{ bytes: a }, { bytes: locked }]), 400, 'password_required');
    await expectReason(
      await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a }, { bytes: locked }], { passwords: JSON.stringify([null, 'wrong']) })),
      400,
      'password_incorrect',
    );
    const ok = await pdfOf(
      await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a }, { bytes: locked }], { passwords: JSON.stringify([null, 'pw-b']) })),
    );
    assert.equal(pdfinfo(ok)['Encrypted'], 'no');
    assert.deepEqual(pagesSaid(ok), ['alpha1', 'alpha2', 'alpha3', 'beta1', 'beta2']);
    await expectReason(
      await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a }, { bytes: b }], { ranges: JSON.stringify(['1', '3']) })),
      400,
      'invalid_argument',
    );
    await expectReason(
      await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a }, { bytes: b }], { ranges: JSON.stringify(['1']) })),
      400,
      'invalid_request',
    );
    await expectReason(
      await t.request('/svc/v1/pdf-merge', multipart([{ bytes: a }, { bytes: new TextEncoder().encode('GIF89a...'), name: 'b.pdf' }])),
      415,
      'unsupported_file_type',
    );
  });

  test('pdf-split: single pages as a zip of valid PDFs; ranges and every; file ids with delivery file_id', async () => {
    const zip = await zipOf(await t.request('/svc/v1/pdf-split', base64Json(c)));
    assert.deepEqual(Object.keys(zip), ['doc-part-001.pdf', 'doc-part-002.pdf', 'doc-part-003.pdf', 'doc-part-004.pdf']);
    Object.values(zip).forEach((part, i) => {
      assertQpdfCheck(part);
      assert.deepEqual(pagesSaid(part), [`gamma${i + 1}`]);
    });
    const ranged = await zipOf(await t.request('/svc/v1/pdf-split', multipart([{ bytes: c }], { ranges: ['1-2', '4,3'] })));
    assert.deepEqual(Object.values(ranged).map(pagesSaid), [['gamma1', 'gamma2'], ['gamma4', 'gamma3']]);
    const every = await jsonOf(await t.request('/svc/v1/pdf-split', base64Json(c, { every: 3, delivery: 'file_id' })));
    assert.equal(every.files.length, 2);
    const parts = await Promise.all(every.files.map((f: any) => fileContent(t, f.file_id)));
    parts.forEach((p, i) => {
      assertQpdfCheck(p.bytes);
      assert.equal(p.bytes.byteLength, every.files[i].bytes);
    });
    assert.deepEqual(parts.map((p) => pagesSaid(p.bytes)), [['gamma1', 'gamma2', 'gamma3'], ['gamma4']]);
    await expectReasonBoth(t, '/svc/v1/pdf-split', () => base64Json(c, { ranges: ['1-5'] }), 400, 'invalid_argument');
    await expectReason(await t.request('/svc/v1/pdf-split', base64Json(c, { every: 2, single: true })), 400, 'invalid_request');
    await expectReason(await t.request('/svc/v1/pdf-split', base64Json(new Uint8Array(100))), 415, 'unsupported_file_type');
  });

  test('pdf-edit: operations in order (rotate, delete, insert blank, reorder, crop, metadata), read back by pdfinfo', async () => {
    const operations = [
      { op: 'rotate', pages: [1], degrees: 90 },
      { op: 'delete', pages: '2' },
      { op: 'insert_blank', after: 0, width: 200, height: 300 },
      { op: 'reorder', order: [1, 3, 4, 2] },
      { op: 'crop', pages: '4', box: { x: 0, y: 0, width: 300, height: 400 } },
      { op: 'set_metadata', title: 'Edited', author: 'svc tests' },
    ];
    const out = await pdfOf(await t.request('/svc/v1/pdf-edit', base64Json(c, { operations })));
    const info = pdfinfo(out, ['-f', '1', '-l', '4']);
    assert.equal(info['Pages'], '4');
    assert.equal(info['Title'], 'Edited');
    assert.equal(info['Author'], 'svc tests');
    assert.match(info['Page    1 size']!, /^200 x 300/);
    // page 4 is gamma 1, turned 90°: the 300 × 400 box as displayed is 400 × 300 before rotation (as pdfinfo prints it)
    assert.match(info['Page    4 size']!, /^400 x 300 /);
    assert.match(info['Page    2 size']!, /^612 x 792 /);
    assert.equal(info['Page    4 rot'], '90');
    assert.deepEqual(pagesSaid(out), ['gamma3', 'gamma4', 'gamma1']);
    // multipart: operations as one JSON field
    const mp = await pdfOf(
      await t.request('/svc/v1/pdf-edit', multipart([{ bytes: c }], { operations: JSON.stringify({ op: 'delete', pages: '1-2' }) })),
    );
    assert.equal(pageCount(mp), 2);
    await expectReasonBoth(
      t,
      '/svc/v1/pdf-edit',
      () => base64Json(c, { operations: [{ op: 'rotate', pages: [5], degrees: 90 }] }),
      400,
      'invalid_argument',
    );
    await expectReason(
      await t.request(
        '/svc/v1/pdf-edit',
        base64Json(c, { operations: [{ op: 'crop', pages: '1', box: { x: 500, y: 0, width: 300, height: 100 } }] }),
      ),
      400,
      'invalid_argument',
    );
    const bad = await expectReason(
      await t.request('/svc/v1/pdf-edit', base64Json(c, { operations: [{ op: 'explode' }] })),
      400,
      'invalid_request',
    );
    assert.match(bad.errors[0].field, /operations/);
    await expectReason(await t.request('/svc/v1/pdf-edit', base64Json(c, { operations: [] })), 400, 'invalid_request');
  });

  test('bookmarks survive merge and split (read back by qpdf --json)', async () => {
    const d = await PDFDocument.load(a);
    const ctx = d.context;
    const outlines = ctx.nextRef();
    const item = ctx.register(ctx.obj({ Title: PDFString.of('Chapter two'), Parent: outlines, Dest: [d.getPage(1).ref, 'Fit'] }));
    ctx.assign(outlines, ctx.obj({ Type: 'Outlines', First: item, Last: item, Count: 1 }));
    d.catalog.set(PDFName.of('Outlines'), outlines);
    const withOutline = await d.save();
    const outline = (pdf: Uint8Array) =>
      JSON.parse(tool('qpdf', ['--json', '--json-key=outlines', writeTmp(pdf)]).stdout).outlines.map((
        o: any,
      ) => [o.title, o.destpageposfrom1]);
    assert.deepEqual(outline(withOutline), [['Chapter two', 2]]);
    const merged = await pdfOf(await t.request('/svc/v1/pdf-merge', multipart([{ bytes: b }, { bytes: withOutline }])));
    assert.deepEqual(outline(merged), [['Chapter two', 4]]);
    const zip = await zipOf(await t.request('/svc/v1/pdf-split', base64Json(withOutline, { ranges: ['2-3'] })));
    assert.deepEqual(outline(Object.values(zip)[0]!), [['Chapter two', 1]]);
  });
});
