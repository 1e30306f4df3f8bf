/** pdf-unlock and pdf-redact through HTTP, judged by qpdf --show-encryption and pdftotext. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type InProcess, inProcess } from '../../support/server.ts';
import { encrypt, makePdf, pdftotext, showEncryption } from '../../services/pdf/helpers.ts';
import { base64Json, expectReason, expectReasonBoth, fileContent, fileIdJson, jsonOf, multipart, pdfOf, upload } from './http.ts';

describe('pdf unlock and redact routes', () => {
  let t: InProcess;
  let doc: Uint8Array;
  before(async () => {
    t = await inProcess();
    doc = await makePdf(2, { lines: (p) => [`Account 4711-000${p} belongs to Jane Roe`, 'Nothing secret on this line'] });
  });
  after(() => t.close());

  test('pdf-unlock: AES-256, AES-128 and RC4 with the user password; qpdf --show-encryption sees no encryption after', async () => {
    for (const kind of [256, 128, 'rc4'] as const) {
      const locked = encrypt(doc, 'secret', 'owner', kind);
      assert.match(showEncryption(locked, 'secret'), /R = \d/);
      const open = await pdfOf(await t.request('/svc/v1/pdf-unlock', multipart([{ bytes: locked }], { password: 'secret' })));
      assert.match(showEncryption(open), /File is not encrypted/, `kind ${kind}`);
      assert.equal(pdftotext(open), pdftotext(doc));
    }
  });

  test('pdf-unlock: owner-only restrictions are removed without a password; with delivery file_id, was_encrypted is told', async () => {
    const restricted = encrypt(doc, '', 'owner-only', 256, ['--print=none', '--modify=none']);
    assert.match(showEncryption(restricted), /print high resolution: not allowed/);
    const id = await upload(t, restricted, 'restricted.pdf');
    const out = await jsonOf(await t.request('/svc/v1/pdf-unlock', fileIdJson(id, { delivery: 'file_id' })));
    assert.equal(out.was_encrypted, true);
    assert.equal(out.filename, 'restricted-unlocked.pdf');
    const open = (await fileContent(t, out.file_id)).bytes;
    assert.match(showEncryption(open), /File is not encrypted/);
    assert.deepEqual((await fileContent(t, id)).bytes, new Uint8Array(restricted), 'the input is never modified');
  });

  test('pdf-unlock reasons: password_required, password_incorrect, pdf_corrupt, unsupported_file_type (inline and as jobs)', async () => {
    const locked = encrypt(doc, 'secret', 'owner', 256);
    await expectReasonBoth(t, '/svc/v1/pdf-unlock', () => base64Json(locked), 400, 'password_required');
    await expectReasonBoth(t, '/svc/v1/pdf-unlock', () => base64Json(locked, { password: 'guess' }), 400, 'password_incorrect');
    const corrupt = new TextEncoder().encode(
      '%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
    );
    await expectReasonBoth(t, '/svc/v1/pdf-unlock', () => base64Json(corrupt), 422, 'pdf_corrupt');
    await expectReasonBoth(
      t,
      '/svc/v1/pdf-unlock',
      () => base64Json(new TextEncoder().encode('<html>not a pdf</html>')),
      415,
      'unsupported_file_type',
    );
    // every other route opening an encrypted file without a password answers the same
    for (
      const [route, opts] of [['pdf-redact', { texts: ['Jane'] }], ['pdf-to-images', {}], ['pdf-watermark', { text: 'X' }], [
        'pdf-split',
        {},
      ], ['pdf-remove-watermark', {}]] as const
    ) {
      await expectReason(await t.request(`/svc/v1/${route}`, base64Json(locked, opts)), 400, 'password_required');
    }
  });

  test('pdf-redact by text and regex: pdftotext of the output no longer contains it; the rest stays', async () => {
    const r = await t.request('/svc/v1/pdf-redact', base64Json(doc, { texts: ['Jane Roe'], regex: ['4711-\\d+'] }));
    const out = await pdfOf(r);
    assert.equal(r.headers.get('content-disposition'), 'attachment; filename="doc-redacted.pdf"');
    const before = pdftotext(doc);
    assert.match(before, /Jane Roe/);
    const text = pdftotext(out);
    assert.doesNotMatch(text, /Jane|Roe|4711/);
    assert.match(text, /Nothing secret on this line/);
    assert.match(text, /Page 2/);
  });

  test('pdf-redact by rectangle (multipart), with file_id delivery listing the boxes; flatten leaves no text layer', async () => {
    // "Page 1" is drawn at x 72, baseline 72 pt below the top, 18 pt high
    const rects = [{ page: 1, x: 60, y: 40, width: 120, height: 40 }];
    const out = await jsonOf(
      await t.request('/svc/v1/pdf-redact', multipart([{ bytes: doc }], { rects: JSON.stringify(rects), delivery: 'file_id' })),
    );
    assert.deepEqual(out.redactions.map((x: any) => x.page), [1]);
    const pdf = (await fileContent(t, out.file_id)).bytes;
    const text = pdftotext(pdf);
    assert.doesNotMatch(text, /Page 1/);
    assert.match(text, /Page 2/);
    assert.match(text, /Jane Roe/);
    const flat = await pdfOf(await t.request('/svc/v1/pdf-redact', base64Json(doc, { texts: ['Jane'], pages: '1', flatten: true })));
    assert.doesNotMatch(pdftotext(flat, ['-f', '1', '-l', '1']), /\w/, 'page 1 is an image now');
    assert.match(pdftotext(flat, ['-f', '2', '-l', '2']), /Jane Roe/, 'pages outside `pages` keep their text');
  });

  test('pdf-redact refusals: rectangle outside the page or page past the end 400 invalid_argument; nothing to redact 400', async () => {
    await expectReasonBoth(
      t,
      '/svc/v1/pdf-redact',
      () => base64Json(doc, { rects: [{ page: 3, x: 0, y: 0, width: 10, height: 10 }] }),
      400,
      'invalid_argument',
    );
    await expectReason(
      await t.request('/svc/v1/pdf-redact', base64Json(doc, { rects: [{ page: 1, x: 600, y: 700, width: 100, height: 200 }] })),
      400,
      'invalid_argument',
    );
    await expectReason(await t.request('/svc/v1/pdf-redact', base64Json(doc, {})), 400, 'invalid_argument');
    const bad = await expectReason(
      await t.request('/svc/v1/pdf-redact', base64Json(doc, { rects: [{ page: 1, x: 'left' }] })),
      400,
      'invalid_request',
    );
    assert.match(bad.errors[0].field, /^rects/);
  });
});
