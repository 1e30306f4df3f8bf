import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { unzipSync } from 'fflate';
import { pdfToImages } from '../../../src/services/pdf/pdf-to-images.ts';
import { pdfSearch } from '../../../src/services/pdf/pdf-search.ts';
import { pdfLayout } from '../../../src/services/pdf/pdf-layout.ts';
import { pdfRedact } from '../../../src/services/pdf/pdf-redact.ts';
import { zipFiles } from '../../../src/services/pdf/zip.ts';
import { assertQpdfCheck, encrypt, magick, makePdf, pdftotext, rejects, showEncryption, tool, writeTmp } from './helpers.ts';

/** PNG/JPEG/WebP signatures */
const isPng = (b: Uint8Array) => b[0] === 0x89 && b[1] === 0x50;
const isJpeg = (b: Uint8Array) => b[0] === 0xff && b[1] === 0xd8;
const isWebp = (b: Uint8Array) => new TextDecoder().decode(b.subarray(8, 12)) === 'WEBP';

async function docWithImage() {
  const d = await PDFDocument.create();
  const f = await d.embedFont(StandardFonts.Helvetica);
  const p = d.addPage([612, 792]);
  p.drawText('Name: John Secretson, account 4711-2233', { x: 72, y: 700, size: 14, font: f });
  p.drawText('Public line stays here', { x: 72, y: 670, size: 14, font: f });
  const img = await d.embedPng(magick(['-size', '100x100', 'xc:red'], 'png'));
  p.drawImage(img, { x: 300, y: 300, width: 200, height: 200 });
  return d.save();
}

test('pdfToImages renders pages at the DPI in png, jpeg and webp on both engines', async () => {
  const src = await makePdf(3, { size: [612, 792] });
  for (const engine of ['wasm', 'auto'] as const) {
    const png = await pdfToImages(src, { pages: '1,3', format: 'png', dpi: 72, engine });
    assert.deepEqual(png.map((p) => [p.page, p.width, p.height]), [[1, 612, 792], [3, 612, 792]]);
    assert.ok(isPng(png[0]!.bytes));
    const jpg = await pdfToImages(src, { pages: [2], format: 'jpeg', dpi: 150, engine });
    assert.ok(isJpeg(jpg[0]!.bytes));
    assert.equal(jpg[0]!.width, 1275);
    const webp = await pdfToImages(src, { pages: [1], format: 'webp', dpi: 36, engine });
    assert.ok(isWebp(webp[0]!.bytes));
    // ImageMagick reads what we wrote, at the size we said
    assert.equal(tool('identify', ['-format', '%w %h', writeTmp(png[0]!.bytes, 'png')]).stdout, '612 792');
  }
  const zip = unzipSync(zipFiles((await pdfToImages(src, { dpi: 20 })).map((p) => ({ name: `page-${p.page}.png`, bytes: p.bytes }))));
  assert.equal(Object.keys(zip).length, 3);
  await rejects(pdfToImages(src, { pages: [4] }), 400, 'invalid_argument');
  await rejects(pdfToImages(encrypt(src, 'pw', 'own', 128)), 400, 'password_required');
  assert.equal((await pdfToImages(encrypt(src, 'pw', 'own', 128), { password: 'pw', pages: [1], dpi: 10 })).length, 1);
});

test('pdfSearch finds text and regex with top-left boxes; layout agrees', async () => {
  const src = await docWithImage();
  const { matches } = await pdfSearch(src, { query: 'john secretson' });
  assert.equal(matches.length, 1);
  const box = matches[0]!.boxes[0]!;
  // drawn at baseline y=700 on a 792 pt page: top-left origin puts the box near y = 792-700-size
  assert.ok(box.y > 75 && box.y < 92 && box.x > 110 && box.x < 125, JSON.stringify(box));
  assert.equal((await pdfSearch(src, { query: 'JOHN', caseSensitive: true })).matches.length, 0);
  assert.deepEqual((await pdfSearch(src, { query: '\\d{4}-\\d{4}', regex: true })).matches.map((x) => x.text), ['4711-2233']);
  await rejects(pdfSearch(src, { query: '(', regex: true }), 400, 'invalid_argument');

  const layout = await pdfLayout(src);
  const page = layout.pages[0]!;
  assert.equal(page.lines[0]!.text, 'Name: John Secretson, account 4711-2233');
  const john = page.lines[0]!.words.find((w) => w.text === 'John')!;
  assert.equal(john.fontSize, 14);
  assert.match(john.font, /Helvetica/);
  assert.ok(Math.abs(john.box.x - box.x) < 0.5 && Math.abs(john.box.y - box.y) < 2);
  assert.deepEqual(page.images.map((i) => [i.box, i.pixelWidth]), [[{ x: 300, y: 292, width: 200, height: 200 }, 100]]);
  // pdftotext -bbox gives the same word position (top-left origin too)
  const bbox = tool('pdftotext', ['-bbox', writeTmp(src), '-']).stdout;
  const m = /xMin="([\d.]+)" yMin="([\d.]+)"[^>]*>John</.exec(bbox)!;
  assert.ok(Math.abs(Number(m[1]) - john.box.x) < 1.5, `${m[1]} vs ${john.box.x}`);
});

test('pdfRedact removes text (pdftotext proves it) and overwrites image pixels', async () => {
  const src = await docWithImage();
  const before = Buffer.from(src);
  const out = await pdfRedact(src, {
    texts: ['John Secretson'],
    regex: ['\\d{4}-\\d{4}'],
    rects: [{ page: 1, x: 300, y: 292, width: 100, height: 100 }],
  });
  assertQpdfCheck(out.pdf);
  assert.ok(before.equals(src), 'input untouched');
  const text = pdftotext(out.pdf);
  assert.doesNotMatch(text, /Secretson|John|4711|2233/);
  assert.match(text, /Public line stays here/);
  assert.match(text, /account/);
  // the embedded image itself: its top-left quarter is black now, the rest still red
  const path = writeTmp(out.pdf);
  tool('pdfimages', ['-png', path, `${path}-img`]);
  const px = (x: number, y: number) => tool('convert', [`${path}-img-000.png`, '-format', `%[pixel:p{${x},${y}}]`, 'info:']).stdout;
  assert.equal(px(10, 10), 'srgb(0,0,0)');
  assert.equal(px(45, 45), 'srgb(0,0,0)');
  assert.equal(px(90, 90), 'srgb(255,0,0)');
  assert.equal(px(10, 90), 'srgb(255,0,0)');
  assert.equal(out.redactions[0]!.page, 1);

  const flat = await pdfRedact(src, { texts: ['account'], flatten: true });
  assertQpdfCheck(flat.pdf);
  assert.equal(pdftotext(flat.pdf).trim(), '');
  await rejects(pdfRedact(src, { rects: [{ page: 1, x: 600, y: 0, width: 50, height: 50 }] }), 400, 'invalid_argument');
  await rejects(pdfRedact(src, { rects: [{ page: 2, x: 0, y: 0, width: 50, height: 50 }] }), 400, 'invalid_argument');
  await rejects(pdfRedact(src, {}), 400, 'invalid_argument');
});

test('redaction over 50 pages of repeated text removes every occurrence', async () => {
  const src = await makePdf(50, { lines: (p) => [`Customer SSN 123-45-${String(6789 + p)}`, 'harmless'] });
  const out = await pdfRedact(src, { regex: ['\\d{3}-\\d{2}-\\d{4}'] });
  assertQpdfCheck(out.pdf);
  const text = pdftotext(out.pdf);
  assert.doesNotMatch(text, /\d{3}-\d{2}-\d{4}/);
  assert.equal(text.match(/harmless/g)!.length, 50);
  assert.equal(out.redactions.length, 50);
});

test('pdfRedact on an encrypted input needs the password and writes a decrypted result', async () => {
  const locked = encrypt(await makePdf(2, { lines: () => ['secret 12345'] }), 'pw', 'own', 256);
  await rejects(pdfRedact(locked, { texts: ['12345'] }), 400, 'password_required');
  const out = await pdfRedact(locked, { texts: ['12345'], password: 'pw' });
  assertQpdfCheck(out.pdf);
  assert.match(showEncryption(out.pdf), /File is not encrypted/);
  assert.doesNotMatch(pdftotext(out.pdf), /12345/);
  assert.match(pdftotext(out.pdf), /secret/);
});
