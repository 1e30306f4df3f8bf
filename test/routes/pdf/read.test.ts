/** pdf-info, pdf-layout, pdf-search through HTTP; pdfinfo is the judge of pdf-info. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { degrees, PDFDocument } from '@cantoo/pdf-lib';
import { type InProcess, inProcess, json } from '../../support/server.ts';
import { encrypt, makePdf, pdfinfo } from '../../services/pdf/helpers.ts';
import { base64Json, expectReason, expectReasonBoth, fileContent, fileIdJson, jsonOf, multipart, upload } from './http.ts';

describe('pdf read routes', () => {
  let t: InProcess;
  let doc: Uint8Array;
  before(async () => {
    t = await inProcess();
    const base = await PDFDocument.load(
      await makePdf(3, { title: 'Quarterly report', lines: (p) => [`Invoice 4711-${p} total due`, 'second line here'] }),
    );
    base.getPage(1).setSize(842, 595);
    base.getPage(2).setRotation(degrees(90));
    doc = await base.save();
  });
  after(() => t.close());

  test('pdf-info agrees with pdfinfo (pages, sizes, rotation, version, title, encryption, size), in all three input forms', async () => {
    const ref = pdfinfo(doc, ['-f', '1', '-l', '3']);
    const id = await upload(t, doc, 'report.pdf');
    const answers = [
      await jsonOf(await t.request('/svc/v1/pdf-info', multipart([{ bytes: doc }]))),
      await jsonOf(await t.request('/svc/v1/pdf-info', base64Json(doc))),
      await jsonOf(await t.request('/svc/v1/pdf-info', fileIdJson(id))),
    ];
    assert.deepEqual(answers[1], answers[0]);
    assert.deepEqual(answers[2], answers[0]);
    const info = answers[0];
    assert.equal(info.page_count, Number(ref['Pages']));
    assert.equal(info.pdf_version, ref['PDF version']);
    assert.equal(info.file_size, doc.byteLength);
    assert.equal(Number(ref['File size']!.split(' ')[0]), doc.byteLength);
    assert.equal(info.metadata.title, ref['Title']);
    assert.equal(info.encrypted, ref['Encrypted'] === 'yes');
    for (const p of info.pages) {
      const [w, , h] = ref[`Page    ${p.page} size`]!.split(' ');
      assert.equal(p.width, Number(w), `page ${p.page} width`);
      assert.equal(p.height, Number(h), `page ${p.page} height`);
      assert.equal(p.rotation, Number(ref[`Page    ${p.page} rot`]), `page ${p.page} rotation`);
      assert.equal(p.content, 'text');
    }
    // the uploaded input is left as it was
    assert.deepEqual((await fileContent(t, id)).bytes, doc);
  });

  test('pdf-info on an encrypted file: password_required, password_incorrect (inline and as a job), then the algorithm and permissions pdfinfo reports', async () => {
    const locked = encrypt(doc, 'user-pw', 'owner-pw', 256, ['--print=none']);
    await expectReasonBoth(t, '/svc/v1/pdf-info', () => base64Json(locked), 400, 'password_required');
    await expectReasonBoth(t, '/svc/v1/pdf-info', () => base64Json(locked, { password: 'nope' }), 400, 'password_incorrect');
    const info = await jsonOf(await t.request('/svc/v1/pdf-info', multipart([{ bytes: locked }], { password: 'user-pw' })));
    const ref = pdfinfo(locked, ['-upw', 'user-pw']);
    assert.equal(info.encrypted, true);
    assert.match(ref['Encrypted']!, new RegExp(`algorithm:${info.encryption.algorithm}`));
    assert.match(ref['Encrypted']!, new RegExp(`print:${info.encryption.permissions.print ? 'yes' : 'no'}`));
    assert.match(ref['Encrypted']!, new RegExp(`copy:${info.encryption.permissions.copy ? 'yes' : 'no'}`));
    assert.equal(info.page_count, Number(ref['Pages']));
  });

  test('a non-PDF is 415 unsupported_file_type whatever its name; a page past the end is 400 invalid_argument', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    for (const route of ['pdf-info', 'pdf-layout', 'pdf-search']) {
      await expectReason(
        await t.request(`/svc/v1/${route}`, multipart([{ bytes: png, name: 'looks-like.pdf' }], { query: 'x' })),
        415,
        'unsupported_file_type',
      );
    }
    await expectReasonBoth(
      t,
      '/svc/v1/pdf-info',
      () => base64Json(new TextEncoder().encode('just text, named .pdf')),
      415,
      'unsupported_file_type',
    );
    await expectReasonBoth(t, '/svc/v1/pdf-layout', () => base64Json(doc, { pages: '2-4' }), 400, 'invalid_argument');
    await expectReason(await t.request('/svc/v1/pdf-search', base64Json(doc, { query: 'x', pages: [9] })), 400, 'invalid_argument');
  });

  test('requests without a document, with two, or with a bad option are 400 with field details', async () => {
    const none = await expectReason(await t.request('/svc/v1/pdf-info', json({ password: 'x' })), 400, 'invalid_request');
    assert.equal(none.errors[0].field, 'file');
    await expectReason(await t.request('/svc/v1/pdf-info', multipart([{ bytes: doc }, { bytes: doc }])), 400, 'invalid_request');
    const bad = await expectReason(
      await t.request('/svc/v1/pdf-search', base64Json(doc, { query: 'x', regex: 'yes' })),
      400,
      'invalid_request',
    );
    assert.equal(bad.errors[0].field, 'regex');
    await expectReason(await t.request('/svc/v1/pdf-info', fileIdJson('file-unknown')), 404, 'not_found');
  });

  test('pdf-layout: lines and words with boxes in points from the top-left, font and size', async () => {
    const layout = await jsonOf(await t.request('/svc/v1/pdf-layout', base64Json(doc, { pages: '1' })));
    assert.equal(layout.origin, 'top-left');
    assert.equal(layout.unit, 'pt');
    assert.equal(layout.pages.length, 1);
    const page = layout.pages[0];
    assert.equal(page.page, 1);
    const first = page.lines[0];
    assert.equal(first.text, 'Page 1');
    // drawn at y = 792 - 72 (baseline) in PDF space: from the top, the box sits just above 72 pt
    assert.ok(first.box.y > 50 && first.box.y < 72, JSON.stringify(first.box));
    assert.ok(Math.abs(first.box.x - 72) < 3, JSON.stringify(first.box));
    const word = page.lines.flatMap((l: any) => l.words).find((w: any) => w.text === 'Invoice');
    assert.ok(word, JSON.stringify(page.lines));
    assert.match(word.font, /Helvetica/);
    assert.ok(Math.abs(word.font_size - 14) < 0.5, String(word.font_size));
  });

  test('pdf-search: text and regex, case option, pages; boxes for highlighting', async () => {
    const plain = await jsonOf(await t.request('/svc/v1/pdf-search', base64Json(doc, { query: 'invoice' })));
    assert.deepEqual(plain.matches.map((m: any) => m.page), [1, 2, 3]);
    assert.equal(plain.truncated, false);
    assert.ok(plain.matches[0].boxes[0].width > 10);
    const cased = await jsonOf(await t.request('/svc/v1/pdf-search', base64Json(doc, { query: 'invoice', case_sensitive: true })));
    assert.equal(cased.matches.length, 0);
    const re = await jsonOf(
      await t.request('/svc/v1/pdf-search', multipart([{ bytes: doc }], { query: '4711-\\d', regex: 'true', pages: '2-3' })),
    );
    assert.deepEqual(re.matches.map((m: any) => [m.page, m.text]), [[2, '4711-2'], [3, '4711-3']]);
    await expectReason(await t.request('/svc/v1/pdf-search', base64Json(doc, { query: '([', regex: true })), 400, 'invalid_argument');
  });
});
