import { test } from 'node:test';
import assert from 'node:assert/strict';
import { imageToPdf } from '../../../src/services/pdf/image-to-pdf.ts';
import { loadSharp } from '../../../src/services/pdf/encode-image.ts';
import { pdfInfo } from '../../../src/services/pdf/pdf-info.ts';
import { assertQpdfCheck, magick, pdfinfo, rejects, tool, writeTmp } from './helpers.ts';

test('imageToPdf: JPEG embedded byte for byte, PNG, WebP, every TIFF page', async () => {
  const jpeg = magick(['-size', '120x80', 'gradient:red-blue', '-quality', '80'], 'jpg');
  const png = magick(['-size', '50x100', 'xc:none', '-fill', 'green', '-draw', 'circle 25,50 25,70'], 'png');
  const webp = magick(['-size', '64x32', 'xc:orange'], 'webp');
  const tiff = magick(['-size', '40x30', 'xc:red', '-size', '30x40', 'xc:blue', '-adjoin'], 'tif');
  const pdf = await imageToPdf([{ bytes: jpeg }, { bytes: png }, { bytes: webp }, { bytes: tiff }]);
  assertQpdfCheck(pdf);
  const info = await pdfInfo(pdf);
  assert.deepEqual(info.pages.map((p) => [p.width, p.height]), [[120, 80], [50, 100], [64, 32], [40, 30], [30, 40]]);
  assert.ok(Buffer.from(pdf).includes(Buffer.from(jpeg)), 'the JPEG stream is the input file itself');
  const list = tool('pdfimages', ['-list', writeTmp(pdf)]).stdout;
  assert.match(list, /\bjpeg\b/);
  assert.match(list, /smask/, 'PNG transparency kept as a soft mask');
});

test('imageToPdf: paper size with margins and orientation', async () => {
  const wide = magick(['-size', '400x200', 'xc:gray'], 'png');
  const pdf = await imageToPdf([{ bytes: wide }], { pageSize: 'A4', margin: 36 });
  assertQpdfCheck(pdf);
  assert.match(pdfinfo(pdf)['Page size']!, /^841\.89 x 595\.28/);
  const portrait = await imageToPdf([{ bytes: wide }], { pageSize: 'Letter', orientation: 'portrait' });
  assert.match(pdfinfo(portrait)['Page size']!, /^612 x 792/);
});

test('imageToPdf: AVIF through sharp where sharp loads', async (t) => {
  const sharp = (await loadSharp()) as any;
  if (!sharp) return t.skip('sharp does not load here; AVIF needs it (documented)');
  const avif = await sharp({ create: { width: 30, height: 20, channels: 3, background: '#00ff00' } }).avif().toBuffer();
  const pdf = await imageToPdf([{ bytes: new Uint8Array(avif) }]);
  assertQpdfCheck(pdf);
  assert.equal(pdfinfo(pdf)['Page size'], '30 x 20 pts');
});

test('imageToPdf refuses what it cannot read', async () => {
  await rejects(imageToPdf([{ bytes: new TextEncoder().encode('%PDF-1.4 not an image') }]), 415, 'unsupported_file_type');
  await rejects(imageToPdf([]), 400, 'invalid_argument');
  await rejects(
    imageToPdf([{ bytes: magick(['-size', '10x10', 'xc:red'], 'png') }], { pageSize: 'Huge' as never }),
    400,
    'invalid_argument',
  );
});
