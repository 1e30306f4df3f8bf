/**
 * image-background-removal through HTTP with a tiny hand-weighted matting model (test/fixtures/models/
 * tiny-matting: red is foreground, everything else background; see scripts/models/gen-tiny-matting.py).
 * No trained model can be fetched here: this proves the protocol (pre-processing, the ONNX run through
 * transformers.js, the matte resized back, alpha or a background colour), not the quality of a real model.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { type InProcess, inProcess } from '../../support/server.ts';
import { inProcessSuite } from '../../support/in-process-suite.ts';
import { base64Json, expectReason, jsonOf } from '../pdf/http.ts';
import { identify, imageOf, magick } from './helpers.ts';

const model = fileURLToPath(new URL('../../fixtures/models/tiny-matting', import.meta.url));
const rgba = (b: Uint8Array, x: number, y: number) =>
  identify(
    b,
    `%[fx:int(255*p{${x},${y}}.r+0.5)],%[fx:int(255*p{${x},${y}}.g+0.5)],%[fx:int(255*p{${x},${y}}.b+0.5)],%[fx:int(255*p{${x},${y}}.a+0.5)]`,
  );

describe('image-background-removal', () => {
  let t: InProcess;
  // a red disc (the "subject") on a blue-gray background
  const photo = magick(['-size', '240x160', 'xc:#5070a0', '-fill', '#e02020', '-draw', 'circle 120,80 120,30'], 'png');
  inProcessSuite((x) => (t = x), { imageBackgroundModel: model });

  test('the matte becomes the alpha channel: subject opaque, background transparent (ImageMagick reads it)', async () => {
    const out = await imageOf(await t.request('/svc/v1/image-background-removal', base64Json(photo, {})), 'image/png');
    assert.match(identify(out, '%w %h %A'), /^240 160 (True|Blend)$/, 'an alpha channel');
    assert.equal(rgba(out, 120, 80), '224,32,32,255', 'subject kept, opaque');
    assert.equal(rgba(out, 10, 10).split(',')[3], '0', 'background transparent');
    const webp = await imageOf(await t.request('/svc/v1/image-background-removal', base64Json(photo, { format: 'webp' })), 'image/webp');
    assert.equal(identify(webp, '%[fx:int(255*p{10,10}.a+0.5)]'), '0');
  });

  test('a background colour replaces the transparency; the share of foreground is reported', async () => {
    const r = await jsonOf(
      await t.request(
        '/svc/v1/image-background-removal',
        base64Json(photo, { background: '#00ff00', format: 'jpeg', delivery: 'file_id' }),
      ),
    );
    const disc = (Math.PI * 50 * 50) / (240 * 160);
    assert.ok(Math.abs(r.foreground - disc) < 0.03, `foreground ${r.foreground} vs disc ${disc.toFixed(3)}`);
    const out = new Uint8Array(await (await t.request(`/svc/v1/files/${r.file_id}/content`)).arrayBuffer());
    const [red, green] = rgba(out, 10, 10).split(',').map(Number);
    assert.ok(green! > 240 && red! < 15, 'background now green');
    await expectReason(await t.request('/svc/v1/image-background-removal', base64Json(photo, { format: 'jpeg' })), 400, 'invalid_argument');
  });

  test('without a configured model the route answers 501 capability_unavailable', async () => {
    const bare = await inProcess();
    try {
      await expectReason(await bare.request('/svc/v1/image-background-removal', base64Json(photo, {})), 501, 'capability_unavailable');
    } finally {
      await bare.close();
    }
  });
});
