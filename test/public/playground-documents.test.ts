/**
 * The playground's document, audio and embedding panels, driven in Debian's Chromium against a listening
 * server: the PDF preview drawn by pdf.js in the page (ink where poppler's pdftoppm puts it), a rotated
 * result previewed, a DOCX dropped onto the page → Markdown, OCR of an ImageMagick-rendered paragraph,
 * transcription of an espeak-ng file and of the (fake) microphone through MediaRecorder, and embeddings
 * equal to what /api/embed answers. No request leaves the origin and no CSP violation is reported.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';
import { releaseOcrEngines } from '../../src/services/ocr/ocr.ts';
import { FIXTURE_CATALOG, type HubStandIn, startFixtureHub } from '../support/hub-stand-in.ts';
import { listening, tempDir } from '../support/server.ts';
import { cer, docx, INTRO, PARAGRAPH, paragraphPng, TITLE } from '../routes/documents/make-docs.ts';
import { soxDuration, speech } from '../routes/media/make-media.ts';

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
let browser: Browser;
let dir: string;
let voice: { path: string; seconds: number };

async function pull(name: string) {
  const res = await fetch(`${srv.url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: name, stream: false }) });
  assert.equal(res.status, 200, await res.clone().text());
}

before(async () => {
  dir = await tempDir('svc-playground-docs-');
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'] });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  await pull('tiny-whisper:test');
  await pull('tiny-bert-embed:test');
  voice = speech('playground-voice', 'Hello from the microphone, this is a recording test.');
  browser = await launchChromium([
    // a fake microphone that plays the espeak-ng recording, permission granted without a prompt
    '--use-fake-device-for-media-stream',
    '--use-fake-ui-for-media-stream',
    `--use-file-for-fake-audio-capture=${voice.path}`,
  ]);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  await hub?.close();
  await releaseOcrEngines();
  await rm(dir, { recursive: true, force: true });
});

function watch(page: Page) {
  const seen = { foreign: [] as string[], problems: [] as string[] };
  page.on('request', (r) => {
    if (!/^(blob:|data:)/.test(r.url()) && !r.url().startsWith(srv.url)) seen.foreign.push(r.url());
  });
  page.on('pageerror', (e) => seen.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) seen.problems.push(m.text());
  });
  return seen;
}

async function openPlayground() {
  const page = await browser.newPage();
  const seen = watch(page);
  await page.goto(`${srv.url}/playground.html`);
  return { page, seen };
}

/** Bounding box of dark pixels (< 128 in every channel) as fractions of the width and height, in the page's canvas. */
const canvasInk = (page: Page) =>
  page.evaluate(() => {
    const c = document.getElementById('pdf-canvas') as HTMLCanvasElement;
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let x0 = Infinity, y0 = Infinity, x1 = -1, y1 = -1;
    for (let y = 0; y < c.height; y++) {
      for (let x = 0; x < c.width; x++) {
        const i = 4 * (y * c.width + x);
        if (d[i + 3] > 0 && d[i] < 128 && d[i + 1] < 128 && d[i + 2] < 128) {
          x0 = Math.min(x0, x);
          y0 = Math.min(y0, y);
          x1 = Math.max(x1, x);
          y1 = Math.max(y1, y);
        }
      }
    }
    return { w: c.width, h: c.height, box: [x0 / c.width, y0 / c.height, (x1 + 1) / c.width, (y1 + 1) / c.height] };
  });

/** The same box from poppler: pdftoppm renders page `n` (long side as the canvas'), ImageMagick trims to the ink (%@). */
function popplerInk(pdf: string, n: number, w: number, h: number): number[] {
  const out = join(dir, `ref-${n}`);
  execFileSync('pdftoppm', ['-png', '-singlefile', '-f', String(n), '-l', String(n), '-scale-to', String(Math.max(w, h)), pdf, out]);
  const geo = execFileSync(
    'convert',
    [`${out}.png`, '-colorspace', 'gray', '-threshold', '50%', '-negate', '-format', '%@ %w %h', 'info:'],
    { encoding: 'utf8' },
  );
  const m = /^(\d+)x(\d+)\+(\d+)\+(\d+) (\d+) (\d+)$/.exec(geo.trim());
  assert.ok(m, `ImageMagick trim geometry: ${geo}`);
  const [bw, bh, bx, by, iw, ih] = m.slice(1).map(Number);
  assert.ok(Math.abs(iw / ih - w / h) < 0.01, `poppler's page ${iw}x${ih} has the canvas' shape ${w}x${h}`);
  return [bx / iw, by / ih, (bx + bw) / iw, (by + bh) / ih];
}

test('PDF preview: pdf.js draws the chosen PDF in the page where poppler puts the ink; pages turn; a rotated result is previewed', async () => {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage([300, 400]).drawText('Top left title', { x: 30, y: 340, font, size: 20 });
  doc.addPage([300, 400]).drawText('second page, low right', { x: 120, y: 40, font, size: 12 });
  const bytes = await doc.save();
  const pdfPath = join(dir, 'two.pdf');
  writeFileSync(pdfPath, bytes);
  const { page, seen } = await openPlayground();
  await page.setInputFiles('#pdf-file', { name: 'two.pdf', mimeType: 'application/pdf', buffer: Buffer.from(bytes) });
  await page.waitForSelector('#pdf-canvas[data-rendered="1/2"]');
  assert.equal(await page.textContent('#pdf-page-label'), 'page 1 of 2');
  const first = await canvasInk(page);
  assert.ok(Math.abs(first.w / first.h - 300 / 400) < 0.01, `portrait canvas ${first.w}x${first.h}`);
  const ref1 = popplerInk(pdfPath, 1, first.w, first.h);
  first.box.forEach((v, i) => assert.ok(Math.abs(v - ref1[i]) < 0.03, `page 1 ink box ${first.box} vs poppler ${ref1}`));
  await page.click('#pdf-next');
  await page.waitForSelector('#pdf-canvas[data-rendered="2/2"]');
  const second = await canvasInk(page);
  const ref2 = popplerInk(pdfPath, 2, second.w, second.h);
  second.box.forEach((v, i) => assert.ok(Math.abs(v - ref2[i]) < 0.03, `page 2 ink box ${second.box} vs poppler ${ref2}`));
  assert.ok(second.box[1] > 0.8, 'page 2 has its ink low on the page');
  await page.screenshot({ path: '/tmp/svc-playground-pdf-preview.png', fullPage: true });

  // an operation that answers a PDF: the result replaces the preview (rotated: landscape now)
  await page.selectOption('#pdf-op', 'rotate');
  const answer = page.waitForResponse((r) => r.url().endsWith('/svc/v1/pdf-edit'));
  await page.click('#pdf-form button[type=submit]');
  const resultBytes = await (await answer).body();
  await page.waitForFunction(() => (document.getElementById('pdf-viewer-title')?.textContent ?? '').startsWith('result'));
  await page.waitForSelector('#pdf-canvas[data-rendered="1/2"]');
  const rotated = await canvasInk(page);
  assert.ok(Math.abs(rotated.w / rotated.h - 400 / 300) < 0.01, `landscape canvas ${rotated.w}x${rotated.h}`);
  const href = await page.getAttribute('#pdf-download', 'href');
  assert.match(href ?? '', /^blob:/);
  // the preview shows the server's answer: poppler renders those bytes with the same ink box
  const rotatedPath = join(dir, 'rotated.pdf');
  writeFileSync(rotatedPath, resultBytes);
  execFileSync('qpdf', ['--check', rotatedPath]);
  const rotatedRef = popplerInk(rotatedPath, 1, rotated.w, rotated.h);
  rotated.box.forEach((v, i) => assert.ok(Math.abs(v - rotatedRef[i]) < 0.03, `rotated ink box ${rotated.box} vs poppler ${rotatedRef}`));
  await page.screenshot({ path: '/tmp/svc-playground-pdf-rotated.png', fullPage: true });
  assert.deepEqual(seen.foreign, []);
  assert.deepEqual(seen.problems, []);
  await page.close();
});

test('documents: a DOCX dropped onto the page comes back as Markdown', async () => {
  const { page, seen } = await openPlayground();
  const b64 = Buffer.from(docx()).toString('base64');
  const dt = await page.evaluateHandle((data) => {
    const t = new DataTransfer();
    t.items.add(
      new File([Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0))], 'report.docx', {
        type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      }),
    );
    return t;
  }, b64);
  await page.dispatchEvent('#doc-drop', 'dragover', { dataTransfer: dt });
  assert.match((await page.getAttribute('#doc-drop', 'class')) ?? '', /over/);
  await page.dispatchEvent('#doc-drop', 'drop', { dataTransfer: dt });
  await page.waitForSelector('#doc-result:not([hidden])', { timeout: 60_000 });
  const md = (await page.textContent('#doc-result')) ?? '';
  assert.match(md, new RegExp(`^${TITLE}$`, 'm'));
  assert.match(md, /^# 1 Introduction$/m);
  assert.ok(md.includes(INTRO), md);
  assert.match(md, /\|\s*Alpha\s*\|\s*1\.5\s*\|\s*kg\s*\|/);
  assert.match((await page.textContent('#doc-status')) ?? '', /docx/i);
  assert.equal(await page.evaluate(() => (document.getElementById('doc-file') as HTMLInputElement).files?.[0]?.name), 'report.docx');
  assert.deepEqual(seen.foreign, []);
  assert.deepEqual(seen.problems, []);
  await page.close();
});

test('OCR: an image of a paragraph is read (character error rate under 5% against the known text)', async () => {
  const png = paragraphPng(dir);
  const { page, seen } = await openPlayground();
  await page.selectOption('#doc-action', 'ocr');
  await page.setInputFiles('#doc-file', { name: 'scan.png', mimeType: 'image/png', buffer: readFileSync(png) });
  await page.click('#doc-form button[type=submit]');
  await page.waitForSelector('#doc-result:not([hidden])', { timeout: 120_000 });
  const text = (await page.textContent('#doc-result')) ?? '';
  const rate = cer(text, PARAGRAPH);
  assert.ok(rate < 0.05, `CER ${(rate * 100).toFixed(2)}%: ${text}`);
  assert.match((await page.textContent('#doc-status')) ?? '', /^OCR \(tesseract\), 1 page\(s\), mean confidence (9\d|100)%$/);
  await page.screenshot({ path: '/tmp/svc-playground-ocr.png', fullPage: true });
  assert.deepEqual(seen.problems, []);
  await page.close();
});

test('transcription of a file: the page shows what /v1/audio/transcriptions answers for it', async () => {
  const { page, seen } = await openPlayground();
  await page.waitForSelector('#asr-model option[value="tiny-whisper:test"]', { state: 'attached' });
  assert.equal(await page.inputValue('#asr-model'), 'tiny-whisper:test', 'a whisper model is chosen by default');
  await page.setInputFiles('#asr-file', { name: 'voice.wav', mimeType: 'audio/wav', buffer: readFileSync(voice.path) });
  await page.click('#asr-run');
  await page.waitForSelector('#asr-result:not([hidden])', { timeout: 120_000 });
  const form = new FormData();
  form.append('file', new Blob([readFileSync(voice.path)], { type: 'audio/wav' }), 'voice.wav');
  form.append('model', 'tiny-whisper:test');
  form.append('response_format', 'verbose_json');
  const direct = (await (await fetch(`${srv.url}/v1/audio/transcriptions`, { method: 'POST', body: form })).json()) as {
    text: string;
    duration: number;
  };
  assert.equal(await page.textContent('#asr-result'), direct.text.trim() || '(no speech found)');
  const status = (await page.textContent('#asr-status')) ?? '';
  const shown = Number(/^([\d.]+) s of audio/.exec(status)?.[1]);
  assert.ok(Math.abs(shown - soxDuration(voice.path)) < 0.05, `${status} vs sox ${soxDuration(voice.path)} s`);
  assert.deepEqual(seen.problems, []);
  await page.close();
});

test("transcription from the microphone: MediaRecorder's WebM reaches the server and is decoded", async () => {
  const page = await browser.newPage();
  const seen = watch(page);
  // note what the page uploads (an init script runs outside the page's CSP; the page itself is unchanged)
  await page.addInitScript(() => {
    const w = window as unknown as { sent?: unknown; fetch: typeof fetch };
    const original = w.fetch.bind(window);
    w.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
      if (String(input).endsWith('/v1/audio/transcriptions') && init?.body instanceof FormData) {
        const f = init.body.get('file') as File;
        w.sent = { name: f.name, type: f.type, size: f.size, head: Array.from(new Uint8Array(await f.slice(0, 4).arrayBuffer())) };
      }
      return original(input, init);
    };
  });
  await page.goto(`${srv.url}/playground.html`);
  await page.waitForSelector('#asr-model option[value="tiny-whisper:test"]', { state: 'attached' });
  await page.click('#mic-start');
  await page.waitForFunction(() => /recording [1-9]/.test(document.getElementById('mic-status')?.textContent ?? ''), undefined, {
    timeout: 10_000,
  });
  await page.waitForTimeout(2_000);
  await page.click('#mic-stop');
  await page.waitForFunction(() => (window as unknown as { sent?: unknown }).sent !== undefined);
  const sent = await page.evaluate(() =>
    (window as unknown as { sent: { name: string; type: string; size: number; head: number[] } }).sent
  );
  assert.equal(sent.name, 'microphone.webm');
  assert.match(sent.type, /^audio\/webm/);
  assert.deepEqual(sent.head, [0x1a, 0x45, 0xdf, 0xa3], 'the recording is a WebM (EBML) stream');
  assert.ok(sent.size > 2_000, `${sent.size} bytes recorded`);
  await page.waitForSelector('#asr-result:not([hidden])', { timeout: 120_000 });
  const status = (await page.textContent('#asr-status')) ?? '';
  const seconds = Number(/^([\d.]+) s of audio/.exec(status)?.[1]);
  assert.ok(seconds > 1.5 && seconds < 6, `the server decoded ${seconds} s of the recording (${status})`);
  await page.screenshot({ path: '/tmp/svc-playground-transcription.png', fullPage: true });
  assert.deepEqual(seen.problems, []);
  await page.close();
});

test('embeddings: the panel shows the vector /api/embed gives for the same text', async () => {
  const { page } = await openPlayground();
  await page.waitForSelector('#embed-model option[value="tiny-bert-embed:test"]', { state: 'attached' });
  assert.equal(await page.inputValue('#embed-model'), 'tiny-bert-embed:test', 'an embedding model is chosen by default');
  await page.fill('#embed-text', 'the quick brown fox');
  await page.click('#embed-form button[type=submit]');
  await page.waitForSelector('#embed-result:not([hidden])');
  const shown = (await page.textContent('#embed-result')) ?? '';
  const direct = ((await (await fetch(`${srv.url}/api/embed`, {
    method: 'POST',
    body: JSON.stringify({ model: 'tiny-bert-embed:test', input: 'the quick brown fox' }),
  })).json()) as { embeddings: number[][] }).embeddings[0];
  assert.equal(shown, `${direct.length} dimensions: [${direct.slice(0, 8).map((x) => x.toFixed(4)).join(', ')}, …]`);
  await page.close();
});
