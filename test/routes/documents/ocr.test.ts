/** POST /svc/v1/ocr with both engines: CER on an ImageMagick-rendered paragraph, a rotated and skewed scan. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type InProcess, json } from '../../support/server.ts';
import { documentsApp } from './app.ts';
import { cer, PARAGRAPH, paragraphPng, post, scannedPdf, twoColumnPdfLib } from './make-docs.ts';

let app: InProcess;
let dir: string;
documentsApp('svc-ocr-', (a, d) => {
  app = a;
  dir = d;
});

interface OcrBody {
  engine: string;
  text: string;
  pages: {
    page: number;
    rotation: number;
    deskew: number;
    width: number;
    height: number;
    confidence: number;
    lines: { text: string; box: { x: number; y: number; width: number; height: number }; words: { text: string; confidence: number }[] }[];
  }[];
}

for (const engine of ['tesseract', 'paddle'] as const) {
  test(`${engine}: a paragraph rendered by ImageMagick comes back with CER < 2%, with line and word boxes`, async () => {
    const png = new Uint8Array(readFileSync(paragraphPng(dir)));
    const res = await post(app.request, '/svc/v1/ocr', png, 'paragraph.png', { engine });
    assert.equal(res.status, 200, await res.clone().text());
    const body = await res.json() as OcrBody;
    assert.equal(body.engine, engine);
    const rate = cer(body.text, PARAGRAPH);
    assert.ok(rate < 0.02, `CER ${(rate * 100).toFixed(2)}% for ${engine}: ${body.text}`);
    const p = body.pages[0]!;
    assert.equal(p.rotation, 0);
    assert.ok(p.lines.length >= 3);
    for (const l of p.lines) {
      assert.ok(l.box.width > 0 && l.box.height > 0 && l.box.x >= 0 && l.box.y >= 0 && l.box.x + l.box.width <= p.width + 1);
      assert.ok(l.words.length > 0 && l.words.every((w) => w.confidence > 0 && w.confidence <= 1));
    }
    assert.ok(p.confidence > 0.8);
  });
}

test('a scanned page rotated 90° and skewed 3° is turned upright and levelled before recognition (both engines)', async () => {
  const pdfPath = join(dir, 'two-col.pdf');
  writeFileSync(pdfPath, await twoColumnPdfLib(1));
  const scan = await scannedPdf(dir, pdfPath);
  for (const engine of ['tesseract', 'paddle']) {
    const res = await post(app.request, '/svc/v1/ocr', scan.pdf, 'scan.pdf', { engine });
    assert.equal(res.status, 200);
    const body = await res.json() as OcrBody;
    const p = body.pages[0]!;
    assert.equal(p.rotation, 270, `${engine} rotation`);
    assert.ok(Math.abs(Math.abs(p.deskew) - 3) <= 0.5, `${engine} deskew ${p.deskew}`);
    for (const phrase of ['Document Understanding Report', 'Introduction', 'Measured values', 'reading order']) {
      assert.ok(body.text.includes(phrase), `${engine} misses "${phrase}"`);
    }
    assert.ok(p.height > p.width, 'the upright page is portrait again');
  }
});

test('the same image as base64 JSON; progress and async job give the same answer', async () => {
  const png = readFileSync(paragraphPng(dir, 'Hello world from the job queue.', 'short.png'));
  const res = await app.request(
    '/svc/v1/ocr',
    json({ input_format: 'Base64EncodedFile', file: png.toString('base64'), engine: 'tesseract' }, { prefer: 'respond-async' }),
  );
  assert.equal(res.status, 202);
  const { job_id } = await res.json() as { job_id: string };
  let job: { status: string; result: OcrBody; progress_current: number | null; progress_total: number | null };
  do {
    await new Promise((r) => setTimeout(r, 200));
    job = await (await app.request(`/svc/v1/jobs/${job_id}`)).json() as typeof job;
  } while (job.status === 'processing');
  assert.equal(job.status, 'completed');
  assert.match(job.result.text, /Hello world from the job queue/);
  assert.equal(job.progress_current, 1);
  assert.equal(job.progress_total, 1);
});
