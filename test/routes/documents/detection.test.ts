/** Format detection by content and 415 unsupported_file_type for what no pipeline ingests. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { zipSync } from 'fflate';
import { sniffFormat } from '../../../src/services/documents/detect.ts';
import { type InProcess, inProcess, json } from '../../support/server.ts';
import { docx, EML, HTML, post, pptx, twoColumnPdfLib, xlsx } from './make-docs.ts';

let app: InProcess;
before(async () => {
  app = await inProcess();
});
after(async () => {
  await app.close();
});

const sharpPng = async (fmt: 'png' | 'jpeg' | 'webp' | 'tiff' | 'gif' | 'avif') => {
  const sharp = (await import('sharp')).default;
  return new Uint8Array(await sharp({ create: { width: 8, height: 8, channels: 3, background: '#808080' } }).toFormat(fmt).toBuffer());
};

test('every supported format is recognised from its bytes alone', async () => {
  const u8 = (s: string) => new TextEncoder().encode(s);
  const cases: [Uint8Array, string][] = [
    [await twoColumnPdfLib(1), 'pdf'],
    [await sharpPng('png'), 'png'],
    [await sharpPng('jpeg'), 'jpeg'],
    [await sharpPng('webp'), 'webp'],
    [await sharpPng('tiff'), 'tiff'],
    [await sharpPng('gif'), 'gif'],
    [await sharpPng('avif'), 'avif'],
    [docx(), 'docx'],
    [await xlsx(), 'xlsx'],
    [pptx(), 'pptx'],
    [
      zipSync({ mimetype: u8('application/vnd.oasis.opendocument.text'), 'content.xml': u8('<office:document-content/>') }, { level: 0 }),
      'odt',
    ],
    [u8(HTML), 'html'],
    [u8('# Title\n\nSome *text* with a [link](http://x).\n\n- a\n- b\n'), 'markdown'],
    [u8('just some words\non two lines\n'), 'text'],
    [u8('name,value\nalpha,1\nbeta,2\n'), 'csv'],
    [u8(EML), 'eml'],
  ];
  // a 2x1 24-bit BMP, written by hand
  const bmpBytes = Buffer.alloc(62);
  bmpBytes.write('BM', 0);
  bmpBytes.writeUInt32LE(62, 2);
  bmpBytes.writeUInt32LE(54, 10);
  bmpBytes.writeUInt32LE(40, 14);
  bmpBytes.writeInt32LE(2, 18);
  bmpBytes.writeInt32LE(1, 22);
  bmpBytes.writeUInt16LE(1, 26);
  bmpBytes.writeUInt16LE(24, 28);
  cases.push([new Uint8Array(bmpBytes), 'bmp']);
  for (const [bytes, want] of cases) assert.equal(sniffFormat(bytes.subarray(0, 65536), () => bytes), want, `expected ${want}`);
});

test('415 unsupported_file_type for a zip of random bytes, an executable and random bytes (whatever the name says)', async () => {
  const zip = zipSync({ 'data.bin': new Uint8Array(randomBytes(4096)), 'more.bin': new Uint8Array(randomBytes(1000)) });
  const exe = new Uint8Array(readFileSync('/bin/true'));
  for (const [bytes, name] of [[zip, 'report.docx'], [exe, 'true.pdf'], [new Uint8Array(randomBytes(5000)), 'scan.png']] as const) {
    for (const route of ['/svc/v1/document-to-markdown', '/svc/v1/ocr', '/svc/v1/document-parsing']) {
      const res = await post(app.request, route, bytes, name);
      assert.equal(res.status, 415, `${route} ${name}`);
      const body = await res.json() as { error: string };
      assert.equal(body.error, 'unsupported_file_type');
    }
  }
  // base64 JSON form answers the same
  const res = await app.request(
    '/svc/v1/document-to-markdown',
    json({ input_format: 'Base64EncodedFile', file: Buffer.from(zip).toString('base64'), filename: 'x.zip' }),
  );
  assert.equal(res.status, 415);
});

test('OCR refuses formats it cannot read with 415, and a bad option with 400', async () => {
  const res = await post(app.request, '/svc/v1/ocr', docx(), 'a.docx');
  assert.equal(res.status, 415);
  const bad = await post(app.request, '/svc/v1/ocr', await sharpPng('png'), 'a.png', { engine: 'nonsense' });
  assert.equal(bad.status, 400);
});
