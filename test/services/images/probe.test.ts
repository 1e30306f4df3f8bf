/** Header probe: declared sizes read without decoding agree with ImageMagick; bombs in every container are refused. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkPixels, probeImage } from '../../../src/services/images/probe.ts';
import { imageConvert } from '../../../src/services/images/convert.ts';
import { identify, magick } from '../../routes/images/helpers.ts';

test('declared sizes of every format match identify (every TIFF page)', async () => {
  for (const ext of ['jpg', 'png', 'webp', 'gif', 'bmp']) {
    const b = magick(['-size', '123x45', 'gradient:red-blue'], ext);
    const p = probeImage(b);
    assert.deepEqual(p.pages, [{ width: 123, height: 45 }], ext);
    assert.equal(identify(b, '%w %h'), '123 45');
  }
  const lossless = magick(['-size', '77x33', 'xc:red', '-define', 'webp:lossless=true'], 'webp');
  assert.deepEqual(probeImage(lossless).pages, [{ width: 77, height: 33 }], 'VP8L');
  const tiff = magick(['-size', '40x30', 'xc:red', '(', '-size', '20x10', 'xc:blue', ')'], 'tif');
  assert.deepEqual(probeImage(tiff).pages, [{ width: 40, height: 30 }, { width: 20, height: 10 }]);
  const avif = (await imageConvert(magick(['-size', '64x40', 'xc:red'], 'png'), { format: 'avif', maxPixels: 1e6 })).outputs[0]!.bytes;
  assert.deepEqual(probeImage(avif).pages, [{ width: 64, height: 40 }]);
});

test('a JPEG, WebP and TIFF declaring 60000×60000 are refused before decoding (413 input_too_large)', () => {
  const jpeg = magick(['-size', '16x16', 'xc:red'], 'jpg');
  // patch the frame header (SOF0: FFC0 len P Y X) to declare 60000×60000
  const sof = jpeg.findIndex((x, i) => x === 0xff && jpeg[i + 1] === 0xc0);
  const dv = new DataView(jpeg.buffer, jpeg.byteOffset);
  dv.setUint16(sof + 5, 60000);
  dv.setUint16(sof + 7, 60000);
  assert.deepEqual(probeImage(jpeg).pages, [{ width: 60000, height: 60000 }]);
  assert.throws(
    () => checkPixels(probeImage(jpeg), 268_402_689),
    (e: { status: number; reason: string }) => e.status === 413 && e.reason === 'input_too_large',
  );
  const tiff = magick(['-size', '16x16', 'xc:red'], 'tif');
  const t = new DataView(tiff.buffer, tiff.byteOffset);
  const le = tiff[0] === 0x49, ifd = t.getUint32(4, le), n = t.getUint16(ifd, le);
  for (let k = 0; k < n; k++) {
    const e = ifd + 2 + k * 12, tag = t.getUint16(e, le), type = t.getUint16(e + 2, le);
    if (tag === 256 || tag === 257) type === 3 ? t.setUint16(e + 8, 60000, le) : t.setUint32(e + 8, 60000, le);
  }
  assert.throws(() => checkPixels(probeImage(tiff), 268_402_689), (e: { status: number }) => e.status === 413);
  const webp = magick(['-size', '16x16', 'xc:red', '-define', 'webp:lossless=true'], 'webp');
  // VP8L: 14-bit width-1 and height-1 after the signature byte
  const w = new DataView(webp.buffer, webp.byteOffset);
  w.setUint32(21, (16383) | (16383 << 14) | (w.getUint32(21, true) & 0xf0000000), true);
  assert.deepEqual(probeImage(webp).pages, [{ width: 16384, height: 16384 }]);
  assert.throws(() => checkPixels(probeImage(webp), 100_000_000), (e: { status: number }) => e.status === 413);
});

test('non-images are 415; truncated headers are 422 image_corrupt', () => {
  assert.throws(
    () => probeImage(new TextEncoder().encode('hello, this is not an image')),
    (e: { status: number; reason: string }) => e.status === 415 && e.reason === 'unsupported_file_type',
  );
  const png = magick(['-size', '8x8', 'xc:red'], 'png').subarray(0, 14);
  assert.throws(() => probeImage(png), (e: { status: number; reason: string }) => e.status === 422 && e.reason === 'image_corrupt');
});
