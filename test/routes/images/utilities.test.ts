/** The image utilities through HTTP, judged by ImageMagick (identify, compare, -deskew), exiftool and the tesseract CLI. */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import type { InProcess } from '../../support/server.ts';
import { inProcessSuite } from '../../support/in-process-suite.ts';
import { base64Json, expectReason, expectReasonBoth, jsonOf, multipart } from '../pdf/http.ts';
import { compareMetric, exiftool, exiftoolWrite, identify, imageOf, magick, tool, writeTmp } from './helpers.ts';

const font = createRequire(import.meta.url).resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf');
const img = (b: Uint8Array) => writeTmp(b, 'img');

/** A white page with lines of black text, drawn by ImageMagick with DejaVu Sans. */
function page(lines: string[], opts: { size?: string; pointsize?: number } = {}): string[] {
  const args = ['-size', opts.size ?? '900x420', 'xc:white', '-font', font, '-pointsize', String(opts.pointsize ?? 30), '-fill', 'black'];
  lines.forEach((l, i) => args.push('-annotate', `+40+${70 + i * 60}`, l));
  return args;
}

/** The tesseract CLI's reading of an image (an independent OCR judge). */
const tesseract = (bytes: Uint8Array) => tool('tesseract', [img(bytes), '-', '--psm', '6']).stdout;

describe('image utilities', () => {
  let t: InProcess;
  inProcessSuite((x) => (t = x));

  test('deskew: a scan turned by 4° comes back within 0.5° of upright (ImageMagick -deskew measures)', async () => {
    const lines = [
      'The quick brown fox jumps over the lazy dog.',
      'Pack my box with five dozen liquor jugs.',
      'Sphinx of black quartz, judge my vow.',
      'How vexingly quick daft zebras jump!',
      'Bright vixens jump; dozy fowl quack.',
    ];
    const skewed = magick([...page(lines), '-background', 'white', '-rotate', '4'], 'png');
    const measure = (b: Uint8Array) => Number(tool('convert', [img(b), '-deskew', '40%', '-format', '%[deskew:angle]', 'info:']).stdout);
    assert.ok(Math.abs(Math.abs(measure(skewed)) - 4) < 0.5, `the fixture is skewed (${measure(skewed)})`);
    const r = await jsonOf(await t.request('/svc/v1/image-deskew', base64Json(skewed, { delivery: 'file_id' })));
    assert.ok(Math.abs(Math.abs(r.deskew_angle) - 4) < 0.5, `reported angle ${r.deskew_angle}`);
    const out = new Uint8Array(await (await t.request(`/svc/v1/files/${r.file_id}/content`)).arrayBuffer());
    const left = measure(out);
    assert.ok(Math.abs(left) < 0.5, `still skewed by ${left}°`);
    assert.match(tesseract(out), /quick brown fox/);
    const inline = await imageOf(
      await t.request('/svc/v1/image-deskew', multipart([{ bytes: skewed, name: 'scan.png' }], { format: 'jpeg' })),
      'image/jpeg',
    );
    assert.ok(Math.abs(measure(inline)) < 0.5);
  });

  test('redact: words found by OCR and boxes are burned in; OCR finds nothing of them afterwards; metadata stripped', async () => {
    let scan = magick([...page(['Account SECRET 4711 closed', 'public words stay here']), '-quality', '95'], 'jpg');
    scan = exiftoolWrite(scan, ['-Artist=Ana', '-ImageDescription=SECRET 4711'], 'jpg');
    assert.match(tesseract(scan), /SECRET 4711/);
    const r = await jsonOf(await t.request('/svc/v1/image-redact', base64Json(scan, { text: ['secret', '4711'], delivery: 'file_id' })));
    assert.equal(r.text_matches, 2);
    const out = new Uint8Array(await (await t.request(`/svc/v1/files/${r.file_id}/content`)).arrayBuffer());
    const read = tesseract(out);
    assert.doesNotMatch(read, /SECRET|4711/i);
    assert.match(read, /public words stay here/);
    assert.match(read, /Account/);
    const tags = exiftool(out, ['-Artist', '-ImageDescription']);
    assert.equal(tags.Artist, undefined);
    assert.equal(tags.ImageDescription, undefined);
    // a box: its pixels are the colour asked, the rest unchanged
    const png = magick(page(['box test']), 'png');
    const boxed = await imageOf(
      await t.request('/svc/v1/image-redact', base64Json(png, { boxes: [{ x: 10, y: 10, width: 100, height: 50 }], color: '#ff0000' })),
      'image/png',
    );
    assert.equal(identify(boxed, '%[fx:int(255*p{50,30}.r)],%[fx:int(255*p{50,30}.g)]'), '255,0');
    assert.equal(compareMetric(boxed, png, 'AE'), 5000);
    await expectReasonBoth(
      t,
      '/svc/v1/image-redact',
      () => base64Json(png, { boxes: [{ x: 850, y: 10, width: 100, height: 50 }] }),
      400,
      'invalid_argument',
    );
  });

  test('analysis: size, format, colour statistics as identify reports them, sharpness, exposure, EXIF summary, text presence', async () => {
    let photo = magick(['-size', '300x200', 'plasma:fractal', '-seed', '11', '-depth', '8', '-quality', '95'], 'jpg');
    photo = exiftoolWrite(photo, ['-Make=SvcCam', '-Model=X1'], 'jpg');
    const a = await jsonOf(await t.request('/svc/v1/image-analysis', base64Json(photo, { detect_text: false })));
    assert.equal(a.width, 300);
    assert.equal(a.format, 'jpeg');
    assert.equal(a.exif.make, 'SvcCam');
    assert.equal(a.exif.model, 'X1');
    assert.equal(a.text, undefined);
    const means = identify(photo, '%[fx:255*mean.r] %[fx:255*mean.g] %[fx:255*mean.b]').split(' ').map(Number);
    assert.ok(Math.abs(a.color.red.mean - means[0]!) < 1.5, `red mean ${a.color.red.mean} vs ${means[0]}`);
    assert.ok(Math.abs(a.color.green.mean - means[1]!) < 1.5);
    assert.ok(Math.abs(a.color.blue.mean - means[2]!) < 1.5);
    const std = Number(identify(photo, '%[fx:255*standard_deviation.r]'));
    assert.ok(Math.abs(a.color.red.std - std) < 1.5, `red std ${a.color.red.std} vs ${std}`);
    const blurred = magick([img(photo), '-blur', '0x4'], 'png');
    const b = await jsonOf(await t.request('/svc/v1/image-analysis', base64Json(blurred, { detect_text: false })));
    assert.ok(b.sharpness.laplacian_variance < a.sharpness.laplacian_variance / 4, 'blur lowers the sharpness measure');
    assert.equal(b.sharpness.blurry, true);
    const dark = await jsonOf(
      await t.request(
        '/svc/v1/image-analysis',
        base64Json(magick([img(photo), '-evaluate', 'multiply', '0.15'], 'png'), { detect_text: false }),
      ),
    );
    assert.equal(dark.exposure.verdict, 'underexposed');
    const withText = await jsonOf(
      await t.request('/svc/v1/image-analysis', base64Json(magick(page(['Invoice number 2026 total due']), 'png'))),
    );
    assert.equal(withText.text.present, true);
    assert.match(withText.text.sample, /Invoice/);
    const noText = await jsonOf(
      await t.request('/svc/v1/image-analysis', base64Json(magick(['-size', '300x200', 'gradient:white-gray70'], 'png'))),
    );
    assert.equal(noText.text.present, false);
  });

  test('color palette: dominant colours and their shares, as ImageMagick counts them', async () => {
    const blocks = magick([
      '-size',
      '50x100',
      'xc:#d02020',
      'xc:#d02020',
      'xc:#d02020',
      'xc:#d02020',
      'xc:#d02020',
      'xc:#2040c0',
      'xc:#2040c0',
      'xc:#2040c0',
      'xc:#f0f0f0',
      'xc:#f0f0f0',
      '+append',
    ], 'png');
    const hist = tool('convert', [img(blocks), '-format', '%c', 'histogram:info:-']).stdout;
    assert.match(hist, /5000: .*#D02020/i);
    const p = await jsonOf(await t.request('/svc/v1/image-color-palette', base64Json(blocks, { count: 3 })));
    assert.deepEqual(p.colors.map((c: { hex: string }) => c.hex), ['#d02020', '#2040c0', '#f0f0f0']);
    const shares = p.colors.map((c: { share: number }) => c.share);
    assert.ok(
      Math.abs(shares[0] - 0.5) < 0.01 && Math.abs(shares[1] - 0.3) < 0.01 && Math.abs(shares[2] - 0.2) < 0.01,
      JSON.stringify(shares),
    );
    await expectReason(await t.request('/svc/v1/image-color-palette', base64Json(blocks, { count: 0 })), 400, 'invalid_argument');
  });

  test('enhance: auto-levels stretches to the full range like ImageMagick -normalize; denoise and sharpen act', async () => {
    const flat = magick(['-size', '200x120', 'gradient:gray40-gray60', '-depth', '8'], 'png');
    const out = await imageOf(await t.request('/svc/v1/image-enhance', base64Json(flat, {})), 'image/png');
    assert.equal(identify(out, '%[fx:int(255*minima)] %[fx:int(255*maxima+0.5)]'), '0 255');
    const im = magick([img(flat), '-contrast-stretch', '0'], 'png');
    assert.ok(compareMetric(out, im, 'RMSE') < 0.02, 'same stretch as ImageMagick');
    const noisy = magick(['-size', '200x120', 'xc:gray50', '-attenuate', '0.6', '+noise', 'Impulse', '-depth', '8'], 'png');
    const noise = (b: Uint8Array) => Number(identify(b, '%[fx:standard_deviation]'));
    const den = await imageOf(await t.request('/svc/v1/image-enhance', base64Json(noisy, { auto_levels: false, denoise: 1 })), 'image/png');
    assert.ok(noise(den) < noise(noisy) / 3, `median filter removes impulse noise (${noise(noisy)} -> ${noise(den)})`);
    const soft = magick(page(['Sharp text']), 'png');
    const sharp = await imageOf(
      await t.request(
        '/svc/v1/image-enhance',
        base64Json(magick([img(soft), '-blur', '0x1.5'], 'png'), { auto_levels: false, sharpen: 120 }),
      ),
      'image/png',
    );
    const edge = (b: Uint8Array) =>
      Number(
        identify(magick([img(b), '-colorspace', 'gray', '-morphology', 'Convolve', 'Laplacian:0'], 'png'), '%[fx:standard_deviation]'),
      );
    assert.ok(edge(sharp) > edge(magick([img(soft), '-blur', '0x1.5'], 'png')) * 1.2, 'sharpening raises edge energy');
    await expectReason(await t.request('/svc/v1/image-enhance', base64Json(flat, { contrast: 500 })), 400, 'invalid_argument');
  });

  test('normalization: upright, gray, at most max_side, PNG, metadata stripped', async () => {
    let jpeg = magick(['-size', '300x200', 'gradient:white-black'], 'jpg');
    jpeg = exiftoolWrite(jpeg, ['-Make=SvcCam', '-Orientation#=6'], 'jpg');
    const out = await imageOf(
      await t.request('/svc/v1/image-normalization', base64Json(jpeg, { max_side: 150, colour_space: 'gray' })),
      'image/png',
    );
    assert.equal(identify(out, '%w %h %[colorspace]'), '100 150 Gray');
    assert.equal(exiftool(out, ['-Make']).Make, undefined);
    const tiff = magick(['-size', '64x48', 'xc:red', 'xc:blue'], 'tif');
    const second = await imageOf(await t.request('/svc/v1/image-normalization', base64Json(tiff, { page_index: 1 })), 'image/png');
    assert.equal(identify(second, '%[fx:int(255*p{1,1}.b)]'), '255');
    await expectReason(await t.request('/svc/v1/image-normalization', base64Json(tiff, { page_index: 2 })), 400, 'invalid_argument');
    await expectReason(
      await t.request('/svc/v1/image-analysis', base64Json(new TextEncoder().encode('plain text, not an image'))),
      415,
      'unsupported_file_type',
    );
  });
});
