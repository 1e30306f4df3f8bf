import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { pdfWatermark, watermarkCapabilities } from '../../../src/services/pdf/pdf-watermark.ts';
import { pdfRemoveWatermark } from '../../../src/services/pdf/pdf-remove-watermark.ts';
import {
  assertQpdfCheck,
  encrypt,
  magick,
  makePdf,
  pdfaByGhostscript,
  pdftotext,
  rejects,
  signedStub,
  squash,
  tool,
  writeTmp,
} from './helpers.ts';

const count = (s: string, w: string) => squash(s).split(squash(w)).length - 1;

test('text watermark: pdftotext sees it; marking again replaces; removal restores exactly the original text', async () => {
  const src = await makePdf(3, { lines: (p) => [`original body ${p}`, 'CONFIDENTIAL in the body itself'] });
  const original = pdftotext(src);
  const once = await pdfWatermark(src, { text: 'DRAFT COPY', layout: 'centered', opacity: 0.4 });
  assertQpdfCheck(once);
  assert.equal(count(pdftotext(once, ['-raw']), 'DRAFT COPY'), 3);
  const again = await pdfWatermark(once, { text: 'SECOND MARK', layout: 'corner', corner: 'top-left', pages: '2' });
  assertQpdfCheck(again);
  const t2 = pdftotext(again, ['-raw']);
  assert.equal(count(t2, 'DRAFT COPY'), 0, 'previous mark replaced');
  assert.equal(count(t2, 'SECOND MARK'), 1);
  const { pdf, removed } = await pdfRemoveWatermark(again);
  assert.equal(removed, 1);
  assertQpdfCheck(pdf);
  assert.equal(pdftotext(pdf), original);
  assert.ok(!Buffer.from(pdf).includes('SvcWatermark'), 'no tagged objects left behind');
  assert.match(pdftotext(pdf), /CONFIDENTIAL in the body itself/);
});

test('removal leaves marks it did not lay: a foreign "watermark" stays', async () => {
  const d = await PDFDocument.create();
  const f = await d.embedFont(StandardFonts.Helvetica);
  d.addPage([400, 400]).drawText('FOREIGN WATERMARK', { x: 50, y: 200, size: 20, font: f, opacity: 0.3 });
  const src = await d.save();
  const marked = await pdfWatermark(src, { text: 'OURS', layout: 'tiled', fontSize: 20 });
  assert.ok(count(pdftotext(marked, ['-raw']), 'OURS') > 4, 'tiled draws many copies');
  const { pdf, removed } = await pdfRemoveWatermark(marked);
  assert.equal(removed, 1);
  const text = pdftotext(pdf);
  assert.match(text, /FOREIGN WATERMARK/);
  assert.doesNotMatch(text, /OURS/);
  assert.equal((await pdfRemoveWatermark(src)).removed, 0);
});

test('Cyrillic, Greek, CJK and Arabic draw with shipped fonts; logo and rotated pages', async () => {
  const src = await makePdf(1);
  const out = await pdfWatermark(src, { text: 'Привет Ελλάδα 机密文件', opacity: 1, rotation: 30, color: '#ff0000' });
  assertQpdfCheck(out);
  const text = pdftotext(out, ['-raw']);
  for (const w of ['Привет', 'Ελλάδα', '机密文件']) assert.ok(squash(text).includes(w), w);
  const fonts = tool('pdffonts', [writeTmp(out)]).stdout;
  assert.match(fonts, /DejaVuSans/);
  assert.match(fonts, /NotoSansSC/);
  const arabic = await pdfWatermark(src, { text: 'سري للغاية' });
  assertQpdfCheck(arabic);
  assert.match(tool('pdffonts', [writeTmp(arabic)]).stdout, /NotoSansArabic/);
  const logo = magick(['-size', '60x30', 'xc:blue'], 'png');
  const rotated = await (async () => {
    const d = await PDFDocument.load(src);
    d.getPage(0).setRotation({ type: 'degrees', angle: 90 } as never);
    return d.save();
  })();
  const withLogo = await pdfWatermark(rotated, { logo, layout: 'corner', corner: 'bottom-right', opacity: 0.5 });
  assertQpdfCheck(withLogo);
  assert.match(tool('pdfimages', ['-list', writeTmp(withLogo)]).stdout, /\s60\s+30\s/);
  assert.equal((await pdfRemoveWatermark(withLogo)).removed, 1);
});

test('watermark refusals: unsupported characters, signed, PDF/A with transparency, password', async () => {
  const src = await makePdf(1);
  await rejects(pdfWatermark(src, { text: 'नमस्ते' }), 422, 'unsupported_characters');
  // a signed document: a /Sig dictionary with a byte range
  await rejects(pdfWatermark(await signedStub(src), { text: 'X' }), 422, 'signed_document');
  // a PDF/A claim (XMP pdfaid) made by ghostscript
  const a = pdfaByGhostscript(src);
  await rejects(pdfWatermark(a, { text: 'X', opacity: 0.5 }), 422, 'pdfa_forbids_transparency');
  assertQpdfCheck(await pdfWatermark(a, { text: 'X', opacity: 1 }));
  await rejects(pdfWatermark(encrypt(src, 'pw', 'o', 256), { text: 'X' }), 400, 'password_required');
  await rejects(pdfWatermark(src, { text: 'X', layout: 'diagonal' as never }), 400, 'invalid_argument');
  await rejects(pdfWatermark(src, { text: 'X', pages: [2] }), 400, 'invalid_argument');
});

test('watermarkCapabilities lists layouts, the longest text and installed fonts', async () => {
  const caps = await watermarkCapabilities();
  assert.deepEqual(caps.layouts, ['tiled', 'centered', 'corner']);
  assert.equal(caps.maxTextLength, 500);
  assert.deepEqual(caps.fonts.map((f) => f.family), ['DejaVu Sans', 'Noto Sans Arabic', 'Noto Sans SC']);
});
