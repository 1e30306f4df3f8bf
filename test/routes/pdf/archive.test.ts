/**
 * pdf-to-pdfa and pdf-pdfa-check judged by qpdf --json (OutputIntent, /ID) and exiftool (XMP pdfaid);
 * pdf-ocr on a scan made by PIL, judged by pdftotext (characters recovered) and pdftotext -bbox
 * (word positions against where PIL drew them), with pdfimages showing the scan untouched.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { InProcess } from '../../support/server.ts';
import { inProcessSuite } from '../../support/in-process-suite.ts';
import { makePdf, pdftotext, tmp, tool, writeTmp } from '../../services/pdf/helpers.ts';
import { base64Json, expectReason, jsonOf, multipart, pdfOf } from './http.ts';

const LINES = ['Invoice 2291 for the harbour office', 'Total amount due: 1480 euros', 'Payable within thirty days of receipt'];

/** A 300 dpi scan: PIL draws the lines with DejaVu Sans 36 px and writes an image-only PDF. Returns word boxes in points. */
function makeScan(): { pdf: Uint8Array; words: { text: string; x: number; y: number }[] } {
  const out = tmp('pdf');
  const script = `
import sys, json
from PIL import Image, ImageDraw, ImageFont
img = Image.new('L', (2480, 1200), 255)
d = ImageDraw.Draw(img)
font = ImageFont.truetype(sys.argv[2], 48)
words = []
for i, line in enumerate(json.loads(sys.argv[3])):
    x, y = 200, 200 + i * 120
    for w in line.split(' '):
        d.text((x, y), w, font=font, fill=0)
        b = d.textbbox((x, y), w, font=font)
        words.append({'text': w, 'x': b[0] * 72 / 300, 'y': b[1] * 72 / 300})
        x = b[2] + d.textlength(' ', font=font)
img.save(sys.argv[1], 'PDF', resolution=300)
print(json.dumps(words))
`;
  const font = 'node_modules/dejavu-fonts-ttf/ttf/DejaVuSans.ttf';
  const words = JSON.parse(execFileSync('/usr/bin/python3', ['-c', script, out, font, JSON.stringify(LINES)]).toString());
  return { pdf: readFileSync(out), words };
}

/** Levenshtein distance (characters), for the recovery rate. */
function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const t = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = t;
    }
  }
  return prev[b.length]!;
}

describe('pdf archive routes: PDF/A and searchable OCR', () => {
  let t: InProcess;
  inProcessSuite((x) => (t = x));

  test('pdf-to-pdfa 2b and 3b: XMP pdfaid (exiftool), sRGB OutputIntent and /ID (qpdf --json), fonts embedded (pdffonts); the check then lists no violation', async () => {
    const doc = await makePdf(2, { lines: () => ['Standard Helvetica text'], title: 'Archive me' });
    const before = await jsonOf(await t.request('/svc/v1/pdf-pdfa-check', base64Json(doc)));
    assert.equal(before.compliant, false);
    assert.ok(before.violations.some((v: any) => v.rule === 'font_embedding'), JSON.stringify(before));
    assert.ok(before.violations.some((v: any) => v.rule === 'output_intent'));
    for (const level of ['2b', '3b']) {
      const r = await t.request('/svc/v1/pdf-to-pdfa', multipart([{ bytes: doc }], { level }));
      const out = await pdfOf(r);
      const exif = JSON.parse(tool('exiftool', ['-json', '-XMP:all', writeTmp(out)]).stdout)[0];
      assert.equal(String(exif.Part), level[0]);
      assert.equal(exif.Conformance, 'B');
      const json = JSON.parse(tool('qpdf', ['--json', '--json-key=qpdf', writeTmp(out)]).stdout);
      const objs = json.qpdf[1] as Record<string, any>;
      const catalog = Object.values(objs).find((o: any) => o.value?.['/Type'] === '/Catalog') as any;
      const intents = catalog.value['/OutputIntents'];
      const intent = Array.isArray(intents) ? intents[0] : objs[`obj:${intents}`].value[0];
      const oi = typeof intent === 'string' ? objs[`obj:${intent}`].value : intent;
      assert.equal(oi['/S'], '/GTS_PDFA1');
      const profile = objs[`obj:${oi['/DestOutputProfile']}`];
      assert.equal(profile.stream.dict['/N'], 3, 'an RGB ICC profile');
      assert.ok(catalog.value['/Metadata']);
      const id = objs.trailer.value['/ID'];
      assert.ok(Array.isArray(id) && id.length === 2, 'the trailer has /ID');
      const fonts = tool('pdffonts', [writeTmp(out)]).stdout.split('\n').slice(2).filter(Boolean);
      assert.ok(fonts.length > 0 && fonts.every((l) => /\byes\b/.test(l.slice(50))), fonts.join('\n'));
      assert.match(pdftotext(out), /Standard Helvetica text/);
      const after = await jsonOf(await t.request('/svc/v1/pdf-pdfa-check', base64Json(out)));
      assert.deepEqual(after.violations, []);
      assert.equal(after.compliant, true);
      assert.equal(after.claimed.part, Number(level[0]));
    }
  });

  test('pdf-to-pdfa refuses an unknown level (400)', async () => {
    const doc = await makePdf(1);
    await expectReason(await t.request('/svc/v1/pdf-to-pdfa', base64Json(doc, { level: '1x' })), 400, 'invalid_request');
  });

  test('pdf-ocr: an invisible text layer; pdftotext recovers >= 97% of the characters at their positions; the scan image is untouched; text pages are skipped', async () => {
    const scan = makeScan();
    assert.equal(pdftotext(scan.pdf).trim(), '', 'the scan has no text before');
    const imgBefore = tool('pdfimages', ['-list', writeTmp(scan.pdf)]).stdout;
    const r = await t.request('/svc/v1/pdf-ocr', base64Json(scan.pdf, { delivery: 'file_id' }));
    const out = await jsonOf(r);
    assert.equal(out.pages[0].status, 'ocr');
    const pdf = new Uint8Array(await (await t.request(`/svc/v1/files/${out.file_id}/content`)).arrayBuffer());
    const text = pdftotext(pdf).replace(/\s+/g, ' ').trim();
    const want = LINES.join(' ');
    const recovered = 1 - distance(text, want) / want.length;
    assert.ok(recovered >= 0.97, `recovered ${recovered}: ${text}`);
    // positions: each word pdftotext finds lies where PIL drew it (within 3 pt)
    const bbox = tool('pdftotext', ['-bbox', writeTmp(pdf), '-']).stdout;
    const found = [...bbox.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="[\d.]+" yMax="[\d.]+">([^<]*)<\/word>/g)].map((m) => ({
      x: Number(m[1]),
      y: Number(m[2]),
      text: m[3]!,
    }));
    let placed = 0;
    for (const w of scan.words) {
      const f = found.find((x) => x.text === w.text);
      if (f && Math.abs(f.x - w.x) < 3 && Math.abs(f.y - w.y) < 4) placed++;
    }
    assert.ok(placed >= scan.words.length * 0.9, `${placed} of ${scan.words.length} words at their positions`);
    // the scan image is the same object: same size and encoding
    const imgAfter = tool('pdfimages', ['-list', writeTmp(pdf)]).stdout;
    assert.equal(
      imgAfter.split('\n')[2]?.replace(/\s+/g, ' ').split(' ').slice(3, 12).join(' '),
      imgBefore.split('\n')[2]?.replace(/\s+/g, ' ').split(' ').slice(3, 12).join(' '),
    );
    // the text layer is invisible: rendering with and without it gives the same pixels
    const a = tool('pdftoppm', ['-r', '30', '-gray', writeTmp(scan.pdf)]).stdout;
    const b = tool('pdftoppm', ['-r', '30', '-gray', writeTmp(pdf)]).stdout;
    assert.equal(a, b);
    // a page with text is skipped
    const again = await jsonOf(await t.request('/svc/v1/pdf-ocr', base64Json(pdf, { delivery: 'file_id' })));
    assert.equal(again.pages[0].status, 'skipped_has_text');
  });
});
