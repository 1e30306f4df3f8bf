/** pdf-watermark, pdf-remove-watermark and the capabilities through HTTP; pdftotext/pdfimages/pdffonts judge. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type InProcess, inProcess } from '../../support/server.ts';
import { magick, makePdf, pdfaByGhostscript, pdftotext, signedStub, squash, tool, writeTmp } from '../../services/pdf/helpers.ts';
import { b64, base64Json, expectReason, expectReasonBoth, fileContent, fileIdJson, jsonOf, multipart, pdfOf, upload } from './http.ts';

const has = (pdf: Uint8Array, w: string, page?: number) =>
  squash(pdftotext(pdf, ['-raw', ...(page ? ['-f', String(page), '-l', String(page)] : [])])).includes(squash(w));
const imagesOf = (pdf: Uint8Array) => tool('pdfimages', ['-list', writeTmp(pdf)]).stdout;

describe('pdf watermark routes', () => {
  let t: InProcess;
  let doc: Uint8Array;
  before(async () => {
    t = await inProcess();
    doc = await makePdf(2, { lines: () => ['Body text stays'] });
  });
  after(() => t.close());

  test('text mark: pdftotext finds it on the pages asked; remove-watermark takes exactly it away again', async () => {
    const marked = await pdfOf(
      await t.request(
        '/svc/v1/pdf-watermark',
        base64Json(doc, { text: 'DRAFT COPY', layout: 'tiled', opacity: 0.4, font_size: 30, color: '#ff0000', pages: '2' }),
      ),
    );
    assert.ok(!has(marked, 'DRAFT COPY', 1), 'page 1 not marked');
    assert.ok(has(marked, 'DRAFT COPY', 2), 'page 2 marked');
    const removed = await jsonOf(
      await t.request('/svc/v1/pdf-remove-watermark', multipart([{ bytes: marked, name: 'marked.pdf' }], { delivery: 'file_id' })),
    );
    assert.equal(removed.removed, 1);
    assert.equal(removed.filename, 'marked-unmarked.pdf');
    const clean = (await fileContent(t, removed.file_id)).bytes;
    assert.ok(!has(clean, 'DRAFT COPY'));
    assert.equal(pdftotext(clean), pdftotext(doc), 'the rest of the text is untouched');
    // inline answer of the removal as well
    const inline = await pdfOf(await t.request('/svc/v1/pdf-remove-watermark', base64Json(marked)));
    assert.equal(pdftotext(inline), pdftotext(doc));
  });

  test('marking again replaces the mark; Cyrillic, Greek, Arabic and CJK drawn with the shipped fonts', async () => {
    const id = await upload(t, doc);
    const first = await jsonOf(await t.request('/svc/v1/pdf-watermark', fileIdJson(id, { text: 'FIRST', delivery: 'file_id' })));
    const second = await pdfOf(
      await t.request('/svc/v1/pdf-watermark', fileIdJson(first.file_id, { text: 'Привет Ελλάδα 机密 سري', opacity: 1 })),
    );
    assert.ok(!has(second, 'FIRST'), 'the previous mark is gone');
    for (const w of ['Привет', 'Ελλάδα', '机密']) assert.ok(has(second, w), w);
    const fonts = tool('pdffonts', [writeTmp(second)]).stdout;
    for (const f of ['DejaVuSans', 'NotoSansSC', 'NotoSansArabic']) assert.match(fonts, new RegExp(f));
    assert.deepEqual((await fileContent(t, id)).bytes, doc, 'input untouched');
  });

  test('logo as a multipart "logo" part, as base64 and as a file id', async () => {
    const logo = magick(['-size', '60x30', 'xc:blue'], 'png');
    const viaPart = await pdfOf(
      await t.request(
        '/svc/v1/pdf-watermark',
        multipart([{ bytes: doc }, { bytes: logo, name: 'logo.png', field: 'logo' }], { layout: 'corner', corner: 'top-left' }),
      ),
    );
    assert.match(imagesOf(viaPart), /\s60\s+30\s/);
    const viaB64 = await pdfOf(await t.request('/svc/v1/pdf-watermark', base64Json(doc, { logo: b64(logo), opacity: 1 })));
    assert.match(imagesOf(viaB64), /\s60\s+30\s/);
    const logoId = await upload(t, logo, 'logo.png');
    const viaId = await pdfOf(await t.request('/svc/v1/pdf-watermark', base64Json(doc, { logo_file_id: logoId })));
    assert.match(imagesOf(viaId), /\s60\s+30\s/);
    const gone = await pdfOf(await t.request('/svc/v1/pdf-remove-watermark', base64Json(viaId)));
    assert.doesNotMatch(imagesOf(gone), /\s60\s+30\s/);
    await expectReason(
      await t.request('/svc/v1/pdf-watermark', base64Json(doc, { logo: b64(logo), logo_file_id: logoId })),
      400,
      'invalid_request',
    );
    await expectReason(await t.request('/svc/v1/pdf-watermark', base64Json(doc, { logo: '***' })), 400, 'invalid_request');
  });

  test('refusals, inline and as jobs: signed_document, pdfa_forbids_transparency, unsupported_characters, page past the end, 415', async () => {
    const signed = await signedStub(doc);
    await expectReasonBoth(t, '/svc/v1/pdf-watermark', () => base64Json(signed, { text: 'X' }), 422, 'signed_document');

    const pdfa = pdfaByGhostscript(doc);
    await expectReasonBoth(
      t,
      '/svc/v1/pdf-watermark',
      () => base64Json(pdfa, { text: 'X', opacity: 0.5 }),
      422,
      'pdfa_forbids_transparency',
    );
    await pdfOf(await t.request('/svc/v1/pdf-watermark', base64Json(pdfa, { text: 'X', opacity: 1 })));

    await expectReasonBoth(t, '/svc/v1/pdf-watermark', () => base64Json(doc, { text: 'नमस्ते' }), 422, 'unsupported_characters');
    const body = await expectReason(
      await t.request('/svc/v1/pdf-watermark', base64Json(doc, { text: 'ok न' })),
      422,
      'unsupported_characters',
    );
    assert.deepEqual(body.errors.characters, ['न']);

    await expectReasonBoth(t, '/svc/v1/pdf-watermark', () => base64Json(doc, { text: 'X', pages: [3] }), 400, 'invalid_argument');
    await expectReason(await t.request('/svc/v1/pdf-watermark', base64Json(doc, {})), 400, 'invalid_argument');
    await expectReason(
      await t.request('/svc/v1/pdf-watermark', base64Json(doc, { text: 'X', layout: 'diagonal' })),
      400,
      'invalid_request',
    );
    await expectReason(
      await t.request('/svc/v1/pdf-watermark', base64Json(new TextEncoder().encode('PK\x03\x04 a zip'), { text: 'X' })),
      415,
      'unsupported_file_type',
    );
    await expectReason(await t.request('/svc/v1/pdf-remove-watermark', base64Json(doc, { pages: '9' })), 400, 'invalid_argument');
  });

  test('GET /svc/v1/pdf-watermark/capabilities: layouts, longest text, installed fonts', async () => {
    const caps = await jsonOf(await t.request('/svc/v1/pdf-watermark/capabilities'));
    assert.deepEqual(caps.layouts, ['tiled', 'centered', 'corner']);
    assert.equal(caps.max_text_length, 500);
    assert.deepEqual(caps.fonts.map((f: any) => f.family), ['DejaVu Sans', 'Noto Sans Arabic', 'Noto Sans SC']);
    const long = await expectReason(
      await t.request('/svc/v1/pdf-watermark', base64Json(doc, { text: 'x'.repeat(caps.max_text_length + 1) })),
      400,
      'invalid_argument',
    );
    assert.match(long.message, /500/);
  });
});
