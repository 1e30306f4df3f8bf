/** pdf-to-images and image-to-pdf through HTTP, judged by ImageMagick identify, pdfinfo and pdfimages. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type InProcess, inProcess } from '../../support/server.ts';
import { magick, makePdf, pageCount, pdfinfo, tool, writeTmp } from '../../services/pdf/helpers.ts';
import { base64Json, expectReason, expectReasonBoth, fileContent, jsonOf, multipart, pdfOf, zipOf } from './http.ts';

/** ImageMagick's view of an image: format and size. */
const identify = (bytes: Uint8Array, ext: string) =>
  tool('identify', ['-format', '%m %w %h\n', writeTmp(bytes, ext)]).stdout.trim().split('\n');

describe('pdf render routes', () => {
  let t: InProcess;
  let doc: Uint8Array;
  before(async () => {
    t = await inProcess();
    doc = await makePdf(3);
  });
  after(() => t.close());

  test('pdf-to-images: one page answers the image itself, at the DPI asked', async () => {
    const r = await t.request('/svc/v1/pdf-to-images', base64Json(doc, { pages: 2, dpi: 72 }));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/png');
    assert.equal(r.headers.get('content-disposition'), 'attachment; filename="doc-page-002.png"');
    const png = new Uint8Array(await r.arrayBuffer());
    assert.deepEqual(identify(png, 'png'), ['PNG 612 792']);
    const jpeg = await t.request(
      '/svc/v1/pdf-to-images',
      multipart([{ bytes: doc }], { pages: '1', format: 'jpeg', dpi: '36', quality: '80' }),
    );
    assert.equal(jpeg.headers.get('content-type'), 'image/jpeg');
    assert.deepEqual(identify(new Uint8Array(await jpeg.arrayBuffer()), 'jpg'), ['JPEG 306 396']);
  });

  test('pdf-to-images: several pages as a zip (PNG, WebP) or as file ids', async () => {
    const zip = await zipOf(await t.request('/svc/v1/pdf-to-images', base64Json(doc, { dpi: 36 })));
    assert.deepEqual(Object.keys(zip), ['doc-page-001.png', 'doc-page-002.png', 'doc-page-003.png']);
    for (const png of Object.values(zip)) assert.deepEqual(identify(png, 'png'), ['PNG 306 396']);
    const webp = await zipOf(await t.request('/svc/v1/pdf-to-images', base64Json(doc, { pages: '3,1', format: 'webp', dpi: 36 })));
    assert.deepEqual(Object.keys(webp), ['doc-page-003.webp', 'doc-page-001.webp']);
    assert.deepEqual(identify(Object.values(webp)[0]!, 'webp'), ['WEBP 306 396']);
    const ids = await jsonOf(await t.request('/svc/v1/pdf-to-images', base64Json(doc, { pages: '1-2', dpi: 36, delivery: 'file_id' })));
    assert.deepEqual(ids.files.map((f: any) => [f.page, f.width, f.height, f.content_type, f.filename]), [
      [1, 306, 396, 'image/png', 'doc-page-001.png'],
      [2, 306, 396, 'image/png', 'doc-page-002.png'],
    ]);
    const stored = await fileContent(t, ids.files[1].file_id);
    assert.equal(stored.contentType, 'image/png');
    assert.deepEqual(identify(stored.bytes, 'png'), ['PNG 306 396']);
  });

  test('pdf-to-images refusals: page past the end 400, bad format 400, non-PDF 415', async () => {
    await expectReasonBoth(t, '/svc/v1/pdf-to-images', () => base64Json(doc, { pages: '2-7' }), 400, 'invalid_argument');
    const bad = await expectReason(await t.request('/svc/v1/pdf-to-images', base64Json(doc, { format: 'gif' })), 400, 'invalid_request');
    assert.equal(bad.errors[0].field, 'format');
    await expectReason(
      await t.request('/svc/v1/pdf-to-images', base64Json(magick(['-size', '10x10', 'xc:red'], 'png'))),
      415,
      'unsupported_file_type',
    );
  });

  test('image-to-pdf: JPEG, PNG and a two-page TIFF in order; JPEG embedded byte for byte; page fits the image', async () => {
    const jpg = magick(['-size', '120x80', 'gradient:red-blue'], 'jpg');
    const png = magick(['-size', '50x70', 'xc:green'], 'png');
    const tif = magick(['-size', '40x30', 'xc:yellow', '-size', '30x40', 'xc:blue', '-adjoin'], 'tif');
    const pdf = await pdfOf(
      await t.request(
        '/svc/v1/image-to-pdf',
        multipart([{ bytes: jpg, name: 'scan.jpg' }, { bytes: png, name: 'b.png' }, { bytes: tif, name: 'c.tif' }]),
      ),
    );
    assert.equal(pageCount(pdf), 4);
    const info = pdfinfo(pdf, ['-f', '1', '-l', '4']);
    assert.deepEqual([1, 2, 3, 4].map((p) => info[`Page    ${p} size`]!.replace(/ pts.*/, '')), [
      '120 x 80',
      '50 x 70',
      '40 x 30',
      '30 x 40',
    ]);
    assert.ok(Buffer.from(pdf).includes(Buffer.from(jpg)), 'the JPEG stream is the file itself');
    const list = tool('pdfimages', ['-list', writeTmp(pdf)]).stdout;
    assert.match(list, /\s120\s+80\s+rgb\s+3\s+8\s+jpeg/);
  });

  test('image-to-pdf: paper size with margins; base64 files; delivery file_id; a non-image is 415', async () => {
    const png = magick(['-size', '300x200', 'xc:white'], 'png');
    const out = await jsonOf(
      await t.request('/svc/v1/image-to-pdf', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          files: [{ file: Buffer.from(png).toString('base64'), filename: 'photo.png' }],
          page_size: 'A4',
          margin: 20,
          delivery: 'file_id',
        }),
      }),
    );
    assert.equal(out.filename, 'photo.pdf');
    const pdf = (await fileContent(t, out.file_id)).bytes;
    assert.match(pdfinfo(pdf)['Page size']!, /^841\.89 x 595\.28 pts/, 'landscape A4 for a landscape image');
    await expectReasonBoth(
      t,
      '/svc/v1/image-to-pdf',
      () => multipart([{ bytes: png }, { bytes: doc, name: 'x.png' }]),
      415,
      'unsupported_file_type',
    );
    await expectReason(
      await t.request('/svc/v1/image-to-pdf', multipart([{ bytes: png }], { page_size: 'Napkin' })),
      400,
      'invalid_argument',
    );
    const broken = png.slice(0, 60); // a PNG signature and header, then nothing
    await expectReasonBoth(t, '/svc/v1/image-to-pdf', () => multipart([{ bytes: broken, name: 'broken.png' }]), 422, 'image_corrupt');
  });
});
