/** image-convert and image-watermark through HTTP; ImageMagick (identify, compare) and exiftool judge. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { unzipSync } from 'fflate';
import { type InProcess, inProcess } from '../../support/server.ts';
import { inProcessSuite } from '../../support/in-process-suite.ts';
import { pngHeader } from '../../support/png-header.ts';
import { asJob, b64, base64Json, expectReason, expectReasonBoth, fileContent, jsonOf, multipart, upload } from '../pdf/http.ts';
import { compareMetric, exiftool, exiftoolWrite, identify, imageOf, magick, pixels, writeTmp } from './helpers.ts';

const convert = '/svc/v1/image-convert';

const writeImg = (b: Uint8Array) => writeTmp(b, 'img');

describe('image-convert', () => {
  let t: InProcess;
  let photo: Uint8Array;
  before(async () => {
    t = await inProcess();
    photo = magick(['-size', '320x200', 'plasma:fractal', '-seed', '7', '-depth', '8'], 'png');
  });
  after(() => t.close());

  test('formats and sizes: every output format as ImageMagick reads it; size never beyond the master unless allow_upscale', async () => {
    const expect: Record<string, [string, string]> = {
      jpeg: ['image/jpeg', 'JPEG'],
      png: ['image/png', 'PNG'],
      webp: ['image/webp', 'WEBP'],
      avif: ['image/avif', 'HEIC|AVIF'],
      tiff: ['image/tiff', 'TIFF'],
      gif: ['image/gif', 'GIF'],
      bmp: ['image/bmp', 'BMP'],
    };
    for (const [format, [type, magickName]] of Object.entries(expect)) {
      const out = await imageOf(await t.request(convert, base64Json(photo, { format, size: 160 })), type);
      assert.match(identify(out, '%m %w %h\n').split('\n')[0]!, new RegExp(`^(${magickName}) 160 100$`), format);
    }
    const capped = await imageOf(await t.request(convert, base64Json(photo, { format: 'png', size: 1000 })), 'image/png');
    assert.equal(identify(capped, '%w %h'), '320 200', 'no upscale by default');
    const up = await imageOf(
      await t.request(convert, base64Json(photo, { format: 'png', size: '640x', allow_upscale: true })),
      'image/png',
    );
    assert.equal(identify(up, '%w %h'), '640 400');
    const box = await imageOf(
      await t.request(convert, multipart([{ bytes: photo, name: 'p.png' }], { format: 'jpg', width: '100', height: '100', fit: 'fill' })),
      'image/jpeg',
    );
    assert.equal(identify(box, '%w %h'), '100 100');
    // the converted pixels are the input's: RMSE against ImageMagick's own resize of the input is small
    const ours = await imageOf(await t.request(convert, base64Json(photo, { format: 'png', size: 160 })), 'image/png');
    const theirs = magick([writeImg(photo), '-resize', '160x100!'], 'png');
    assert.ok(compareMetric(ours, theirs, 'RMSE') < 0.03, 'resized like ImageMagick does');
  });

  test('the WASM engine gives the same images (PNG, JPEG, WebP, AVIF in and out)', async () => {
    const ref = await imageOf(await t.request(convert, base64Json(photo, { format: 'png', size: 160, engine: 'sharp' })), 'image/png');
    for (
      const [format, type, tol] of [['png', 'image/png', 0.02], ['jpeg', 'image/jpeg', 0.04], ['webp', 'image/webp', 0.05], [
        'avif',
        'image/avif',
        0.06,
      ]] as const
    ) {
      const out = await imageOf(await t.request(convert, base64Json(photo, { format, size: 160, engine: 'wasm' })), type);
      assert.ok(compareMetric(asSrgb(out), ref, 'RMSE') < tol, `${format} via WASM`);
      const back = await imageOf(await t.request(convert, base64Json(out, { format: 'png', engine: 'wasm' })), 'image/png');
      assert.equal(identify(back, '%w %h'), '160 100', `${format} decoded via WASM`);
    }
  });

  test('TIFF: every page, page_index, multi-page TIFF output; page_index past the last page is 400 invalid_argument', async () => {
    const tiff = magick(['-size', '64x48', 'xc:#c00000', 'xc:#00a000', 'xc:#0000c0'], 'tif');
    assert.equal(identify(tiff, '%p ').trim(), '0 1 2');
    const zip = unzipSync(
      await imageOf(await t.request(convert, multipart([{ bytes: tiff, name: 'scan.tif' }], { format: 'png' })), 'application/zip'),
    );
    assert.deepEqual(Object.keys(zip).sort(), ['scan-p1.png', 'scan-p2.png', 'scan-p3.png']);
    assert.equal(rgbAt(zip['scan-p3.png']!, 10, 10), '0,0,192');
    const second = await imageOf(await t.request(convert, base64Json(tiff, { format: 'png', page_index: 1 })), 'image/png');
    assert.equal(rgbAt(second, 10, 10), '0,160,0');
    const all = await imageOf(await t.request(convert, base64Json(tiff, { format: 'tiff', size: 32 })), 'image/tiff');
    assert.equal(identify(all, '%p:%wx%h '), '0:32x24 1:32x24 2:32x24 ');
    assert.equal(rgbAt(all, 5, 5), '192,0,0 0,160,0 0,0,192');
    await expectReasonBoth(t, convert, () => base64Json(tiff, { format: 'png', page_index: 3 }), 400, 'invalid_argument');
    const ids = await jsonOf(await t.request(convert, base64Json(tiff, { format: 'webp', delivery: 'file_id' })));
    assert.equal(ids.files.length, 3);
    assert.equal(ids.files[2].page_index, 2);
    assert.equal((await fileContent(t, ids.files[0].file_id)).contentType, 'image/webp');
  });

  test('CMYK: profile embedded, colours within ΔE after a round trip through ImageMagick/lcms back to sRGB', async () => {
    // colours inside the coated-offset (FOGRA39) gamut; a saturated sRGB blue such as #4060b0 is not, and moves by ~5
    const colours = ['#b04040', '#40a060', '#5070a0', '#d0c060', '#808080', '#603020', '#e0d0c0'];
    // TIFF: our lcms-wasm transform, lossless; JPEG: libvips' transform through the same profile, plus JPEG loss
    const tolerance: Record<string, number> = { tiff: 2, jpeg: 5 };
    const swatch = magick(['-size', '40x40', ...colours.map((c) => `xc:${c}`), '+append'], 'png');
    for (const format of ['tiff', 'jpeg']) {
      const cmyk = await imageOf(
        await t.request(convert, base64Json(swatch, { format, colour_space: 'cmyk', quality: 98 })),
        `image/${format}`,
      );
      assert.equal(identify(cmyk, '%[colorspace]'), 'CMYK', format);
      const tags = exiftool(cmyk, ['-ProfileDescription', '-ColorSpaceData']);
      assert.equal(tags.ProfileDescription, 'svc CMYK (FOGRA39L characterization, Argyll colprof)');
      assert.match(String(tags.ColorSpaceData), /CMYK/);
      // ImageMagick converts back with the embedded profile (its own lcms) to sRGB, then both are measured in Lab
      const back = magick([writeImg(cmyk), '-intent', 'relative', '-black-point-compensation', '-profile', srgbIcc()], 'png');
      for (let i = 0; i < colours.length; i++) {
        const a = lab(swatch, i * 40 + 20), b = lab(back, i * 40 + 20);
        const dE = Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
        assert.ok(dE < tolerance[format]!, `${format} ${colours[i]}: ΔE ${dE.toFixed(2)}`);
      }
    }
    await expectReason(await t.request(convert, base64Json(swatch, { format: 'png', colour_space: 'cmyk' })), 400, 'invalid_argument');
    // CMYK input: our own CMYK TIFF read back by both engines (libvips; utif2 + lcms-wasm) gives the colours again
    const cmykTiff = await imageOf(await t.request(convert, base64Json(swatch, { format: 'tiff', colour_space: 'cmyk' })), 'image/tiff');
    for (const engine of ['sharp', 'wasm']) {
      const back = await imageOf(await t.request(convert, base64Json(cmykTiff, { format: 'png', engine })), 'image/png');
      for (let i = 0; i < colours.length; i++) {
        const a = lab(swatch, i * 40 + 20), b = lab(back, i * 40 + 20);
        assert.ok(Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]) < 2, `${engine} reads CMYK TIFF: ${colours[i]}`);
      }
    }
    const cmykJpeg = await imageOf(await t.request(convert, base64Json(swatch, { format: 'jpeg', colour_space: 'cmyk' })), 'image/jpeg');
    await expectReason(await t.request(convert, base64Json(cmykJpeg, { format: 'png', engine: 'wasm' })), 501, 'capability_unavailable');
  });

  test('gray: one channel where the format has one', async () => {
    const g = await imageOf(await t.request(convert, base64Json(photo, { format: 'png', colour_space: 'gray' })), 'image/png');
    assert.equal(identify(g, '%[colorspace]'), 'Gray');
    const gt = await imageOf(await t.request(convert, base64Json(photo, { format: 'tiff', color_space: 'gray' })), 'image/tiff');
    assert.equal(identify(gt, '%[colorspace]'), 'Gray');
  });

  test('metadata: EXIF kept (orientation applied and reset) or stripped; XMP rights written even with keep_metadata false', async () => {
    let jpeg = magick(['-size', '300x200', 'gradient:white-black'], 'jpg');
    jpeg = exiftoolWrite(jpeg, ['-Make=SvcCam', '-Model=X1', '-Orientation#=6', '-XMP-dc:Title=Kept title'], 'jpg');
    const kept = await imageOf(await t.request(convert, base64Json(jpeg, { format: 'jpeg', keep_metadata: true })), 'image/jpeg');
    const k = exiftool(kept, ['-n', '-Make', '-Model', '-Orientation', '-Title']);
    assert.equal(k.Make, 'SvcCam');
    assert.equal(k.Orientation, 1, 'orientation applied to the pixels, tag reset');
    assert.equal(k.Title, 'Kept title');
    assert.equal(identify(kept, '%w %h'), '200 300', 'turned upright');
    for (const format of ['png', 'webp', 'jpeg', 'tiff']) {
      const r = await imageOf(
        await t.request(
          convert,
          base64Json(jpeg, {
            format,
            keep_metadata: false,
            rights: {
              notice: '© 2026 Ana Pérez',
              creator: 'Ana Pérez',
              credit_line: 'Photo: Ana Pérez',
              usage_terms: 'Editorial use only',
              rights_page: 'https://example.com/rights',
            },
          }),
        ),
        `image/${format}`,
      );
      const x = exiftool(r, [
        '-Make',
        '-Title',
        '-XMP-dc:Rights',
        '-XMP-dc:Creator',
        '-XMP-photoshop:Credit',
        '-XMP-xmpRights:UsageTerms',
        '-XMP-xmpRights:WebStatement',
        '-XMP-xmpRights:Marked',
      ]);
      assert.equal(x.Rights, '© 2026 Ana Pérez', format);
      assert.equal(x.Creator, 'Ana Pérez', format);
      assert.equal(x.Credit, 'Photo: Ana Pérez', format);
      assert.equal(x.UsageTerms, 'Editorial use only', format);
      assert.equal(x.WebStatement, 'https://example.com/rights', format);
      assert.equal(x.Marked, true, format);
      assert.equal(x.Make, undefined, `${format}: EXIF stripped`);
      assert.equal(x.Title, undefined, `${format}: input XMP stripped`);
      assert.equal(identify(r, '%w %h').split('\n')[0], '200 300', `${format}: upright without EXIF too`);
    }
    const stripped = exiftool(await imageOf(await t.request(convert, base64Json(jpeg, { format: 'webp' })), 'image/webp'), ['-Make']);
    assert.equal(stripped.Make, undefined);
    const keptWebp = exiftool(
      await imageOf(await t.request(convert, base64Json(jpeg, { format: 'webp', keep_metadata: true })), 'image/webp'),
      ['-Make', '-n', '-Orientation'],
    );
    assert.equal(keptWebp.Make, 'SvcCam');
    assert.equal(keptWebp.Orientation, 1);
  });

  test('embedded ICC profiles are honoured: an Adobe RGB image comes out in sRGB colours', async () => {
    const srgb = magick(['-size', '40x40', 'xc:#3a8f3a'], 'png');
    const adobe = magick([writeImg(srgb), '-profile', srgbIcc(), '-profile', a98Icc()], 'png');
    assert.notEqual(rgbAt(adobe, 5, 5), '58,143,58', 'the Adobe RGB numbers differ');
    for (const engine of ['sharp', 'wasm']) {
      const out = await imageOf(await t.request(convert, base64Json(adobe, { format: 'png', engine })), 'image/png');
      const [r, g, b] = identify(out, '%[fx:int(255*p{5,5}.r)] %[fx:int(255*p{5,5}.g)] %[fx:int(255*p{5,5}.b)]').split(' ').map(Number);
      assert.ok(Math.abs(r! - 58) <= 3 && Math.abs(g! - 143) <= 3 && Math.abs(b! - 58) <= 3, `${engine}: ${r},${g},${b}`);
    }
  });

  test('watermark: text pixels present in the corner, the rest of the image unchanged; logo; unsupported_characters', async () => {
    const plain = await imageOf(await t.request(convert, base64Json(photo, { format: 'png' })), 'image/png');
    assert.equal(compareMetric(plain, photo, 'AE'), 0, 'a PNG round trip changes nothing');
    const marked = await imageOf(
      await t.request(
        convert,
        base64Json(photo, {
          format: 'png',
          watermark: { text: 'SVC © Ана', layout: 'corner', corner: 'bottom-right', opacity: 1, color: '#ffffff', font_size: 18 },
        }),
      ),
      'image/png',
    );
    const changed = compareMetric(marked, photo, 'AE');
    assert.ok(changed > 100, `text pixels drawn (${changed})`);
    const top = (b: Uint8Array) => magick([writeImg(b), '-crop', '320x150+0+0', '+repage'], 'png');
    const left = (b: Uint8Array) => magick([writeImg(b), '-crop', '180x200+0+0', '+repage'], 'png');
    assert.equal(compareMetric(top(marked), top(photo), 'AE'), 0, 'nothing changed above the corner');
    assert.equal(compareMetric(left(marked), left(photo), 'AE'), 0, 'nothing changed left of the corner');
    const tiled = await imageOf(
      await t.request(convert, base64Json(photo, { format: 'png', watermark: { text: 'DRAFT', layout: 'tiled' } })),
      'image/png',
    );
    assert.ok(compareMetric(tiled, photo, 'AE') > 2000, 'tiled marks cover the image');
    assert.equal(compareMetric(left(tiled), left(photo), 'AE') > 0, true);
    const logo = magick(['-size', '40x20', 'xc:#0000ff'], 'png');
    const withLogo = await imageOf(
      await t.request(
        convert,
        multipart([{ bytes: photo, name: 'p.png' }, { bytes: logo, name: 'l.png', field: 'logo' }], {
          format: 'png',
          watermark: JSON.stringify({ layout: 'corner', corner: 'top-left', opacity: 1, logo_width: 40 }),
        }),
      ),
      'image/png',
    );
    assert.equal(rgbAt(withLogo, 20, 15), '0,0,255', 'logo drawn at the top-left corner');
    assert.equal(compareMetric(withLogo, photo, 'AE'), 800, 'exactly the 40×20 logo changed');
    const body = await expectReason(
      await t.request(convert, base64Json(photo, { watermark: { text: 'ok \u{13000}' } })),
      422,
      'unsupported_characters',
    );
    assert.match(body.message, /U\+13000/);
  });

  test('decompression bomb: a 50000×50000 PNG header is refused with 413 before decoding, without the RSS growing', async () => {
    const bomb = pngHeader(50000, 50000);
    const before = process.memoryUsage().rss;
    const body = await expectReason(await t.request(convert, base64Json(bomb, { format: 'jpeg' })), 413, 'input_too_large');
    assert.match(body.message, /50000×50000/);
    await expectReason(await t.request('/svc/v1/image-watermark', base64Json(bomb, { text: 'x' })), 413, 'input_too_large');
    const grown = process.memoryUsage().rss - before;
    assert.ok(grown < 64 * 1024 * 1024, `RSS grew by ${(grown / 1048576).toFixed(1)} MB`);
    const small = await inProcess({ maxImagePixels: 10_000 });
    try {
      await expectReason(await small.request(convert, base64Json(photo, {})), 413, 'input_too_large');
      // a logo is held to the same limit
      await expectReason(
        await small.request(convert, base64Json(magick(['-size', '50x50', 'xc:red'], 'png'), { watermark: { logo: b64(photo) } })),
        413,
        'input_too_large',
      );
    } finally {
      await small.close();
    }
  });

  test('input forms, job contract, 415 for non-images, 400 for unknown options', async () => {
    const id = await upload(t, photo, 'photo.png');
    const viaId = await jsonOf(
      await t.request(convert, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input_format: 'FileIdentifier', file_id: id, format: 'webp', delivery: 'file_id' }),
      }),
    );
    assert.equal(viaId.filename, 'photo.webp');
    assert.equal(viaId.width, 320);
    const rec = await asJob(t, convert, base64Json(photo, { format: 'jpeg', size: 64, delivery: 'file_id' }));
    assert.equal(rec.status, 'completed', JSON.stringify(rec));
    assert.equal(rec.result.width, 64);
    await expectReasonBoth(
      t,
      convert,
      () => base64Json(new TextEncoder().encode('%PDF-1.4 not an image at all'), {}),
      415,
      'unsupported_file_type',
    );
    await expectReason(await t.request(convert, base64Json(photo, { format: 'jxl' })), 400, 'invalid_request');
    // a PNG whose data stops short of what its header declares does not decode: 422 image_corrupt, same as a job
    await expectReasonBoth(t, convert, () => base64Json(pngHeader(100, 100), { format: 'jpeg' }), 422, 'image_corrupt');
    await expectReason(await t.request(convert, base64Json(photo, { watermark: { text: 'x', font_size: 1 } })), 400, 'invalid_argument');
    // HEIC (HEVC) is recognised, and no decoder for it exists in this build
    const heic = new Uint8Array(64);
    heic.set([0, 0, 0, 24, ...new TextEncoder().encode('ftypheic'), 0, 0, 0, 0, ...new TextEncoder().encode('mif1heic')]);
    heic.set([...new TextEncoder().encode('ispe'), 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 3, 0], 30);
    await expectReason(await t.request(convert, base64Json(heic, {})), 501, 'capability_unavailable');
    await expectReason(await t.request(convert, base64Json(photo, { format: 'bmp', rights: { notice: 'x' } })), 400, 'invalid_argument');
  });
});

describe('image-watermark', () => {
  let t: InProcess;
  inProcessSuite((x) => (t = x));

  test('burned in, keeping size, format and metadata; capabilities list layouts, longest text and fonts', async () => {
    let jpeg = magick(['-size', '400x300', 'gradient:gray80-gray40', '-quality', '95'], 'jpg');
    jpeg = exiftoolWrite(jpeg, ['-Artist=Ana', '-XMP-dc:Title=Harbour'], 'jpg');
    const out = await imageOf(
      await t.request(
        '/svc/v1/image-watermark',
        base64Json(jpeg, { text: 'SAMPLE', layout: 'centered', rotation: 0, font_size: 40, opacity: 0.8, color: '#ff0000' }),
      ),
      'image/jpeg',
    );
    assert.equal(identify(out, '%m %w %h'), 'JPEG 400 300');
    const x = exiftool(out, ['-Artist', '-Title']);
    assert.equal(x.Artist, 'Ana');
    assert.equal(x.Title, 'Harbour');
    // red text pixels in the centre, the far corner as before (JPEG re-encoding only)
    const centre = pixels(magick([writeImg(out), '-crop', '200x60+100+120', '+repage'], 'png'));
    let red = 0;
    for (let i = 0; i < centre.data.length; i += 3) {
      if (centre.data[i]! > 180 && centre.data[i + 1]! < 90 && centre.data[i + 2]! < 90) red++;
    }
    assert.ok(red > 150, `red mark pixels in the centre (${red})`);
    const corner = (b: Uint8Array) => magick([writeImg(b), '-crop', '60x40+0+0', '+repage'], 'png');
    assert.ok(compareMetric(corner(out), corner(jpeg), 'RMSE') < 0.02, 'corner unchanged but for JPEG re-encoding');
    const caps = await jsonOf(await t.request('/svc/v1/image-watermark/capabilities'));
    assert.deepEqual(caps.watermark_layouts, ['tiled', 'centered', 'corner']);
    assert.equal(caps.watermark_max_text_length, 500);
    assert.deepEqual(caps.watermark_installed_fonts.map((f: { family: string }) => f.family), [
      'DejaVu Sans',
      'Noto Sans Arabic',
      'Noto Sans SC',
    ]);
    const conv = await jsonOf(await t.request('/svc/v1/image-convert/capabilities'));
    assert.deepEqual(conv.watermark_layouts, caps.watermark_layouts);
    for (const f of ['jpeg', 'png', 'webp', 'avif', 'tiff', 'gif', 'bmp']) assert.ok(conv.formats_in.includes(f), f);
    assert.deepEqual(conv.formats_out, ['jpeg', 'png', 'webp', 'avif', 'tiff', 'gif', 'bmp']);
  });
});

/** ImageMagick's reading as sRGB (its HEIF reader leaves AVIF pixels in YCbCr). */
const asSrgb = (b: Uint8Array) => magick([`${writeImg(b)}[0]`, '-colorspace', 'sRGB'], 'png');

/** "r,g,b" of pixel (x, y) of every frame, as ImageMagick decodes it, frames separated by spaces. */
function rgbAt(bytes: Uint8Array, x: number, y: number): string {
  return identify(bytes, `%[fx:int(255*p{${x},${y}}.r+0.5)],%[fx:int(255*p{${x},${y}}.g+0.5)],%[fx:int(255*p{${x},${y}}.b+0.5)] `).trim();
}

/** An Adobe RGB (1998)-compatible profile: ghostscript's a98.icc (ghostscript is one of the CI's Debian packages). */
function a98Icc(): string {
  const root = '/usr/share/ghostscript';
  const v = readdirSync(root).find((d) => existsSync(`${root}/${d}/iccprofiles/a98.icc`));
  if (!v) throw new Error('ghostscript (a98.icc) is needed by this test');
  return `${root}/${v}/iccprofiles/a98.icc`;
}

function srgbIcc(): string {
  return new URL('../../../src/services/images/profiles/srgb.icc', import.meta.url).pathname;
}

/** L*a*b* of the pixel at (x, 20) as ImageMagick converts it. */
function lab(bytes: Uint8Array, x: number): [number, number, number] {
  const txt = identify(
    magick([`${writeImg(bytes)}[0]`, '-colorspace', 'Lab'], 'tif'),
    `%[fx:p{${x},20}.r] %[fx:p{${x},20}.g] %[fx:p{${x},20}.b]`,
  );
  const [l, a, b] = txt.split(' ').map(Number);
  return [l! * 100, (a! - 0.5) * 255, (b! - 0.5) * 255];
}
