/** document-split, document-validate, document-thumbnails, document-highlight. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InProcess } from '../../support/server.ts';
import { documentsApp } from './app.ts';
import { docx, HTML, paragraphPng, post, pptx, twoColumnPdfLib } from './make-docs.ts';

let app: InProcess;
let dir: string;
documentsApp('svc-tools-', (a, d) => {
  app = a;
  dir = d;
});

/** The annotation dictionaries of a page, as `qpdf --json` reads them (indirect references resolved one level). */
function qpdfAnnotations(pdf: string, page: number): Record<string, unknown>[] {
  const j = JSON.parse(
    execFileSync('qpdf', ['--json=2', '--json-key=pages', '--json-key=qpdf', pdf], { encoding: 'utf8', maxBuffer: 64 << 20 }),
  );
  const objects = j.qpdf[1] as Record<string, { value?: Record<string, unknown> }>;
  const deref = (v: unknown) => (typeof v === 'string' && / \d+ R$/.test(v) ? objects[`obj:${v}`]?.value : v);
  const pageObj = objects[`obj:${j.pages[page - 1].object}`]!.value!;
  const annots = (deref(pageObj['/Annots']) ?? []) as unknown[];
  return annots.map((a) => deref(a) as Record<string, unknown>);
}

interface Chunk {
  index: number;
  text: string;
  pages: number[];
  heading_path: string[];
  tokens: number;
}

test('split by pages, by headings (heading paths) and by tokens with overlap', async () => {
  const pdf = await twoColumnPdfLib();
  const byPage = await (await post(app.request, '/svc/v1/document-split', pdf, 'r.pdf', { strategy: 'pages' })).json() as {
    chunks: Chunk[];
  };
  assert.deepEqual(byPage.chunks.map((c) => c.pages), [[1], [2]]);
  assert.ok(!byPage.chunks[0]!.text.includes('ACME Research Quarterly'));
  const byHead = await (await post(app.request, '/svc/v1/document-split', pdf, 'r.pdf', { strategy: 'headings' })).json() as {
    chunks: Chunk[];
  };
  const results = byHead.chunks.find((c) => c.text.startsWith('## 3 Results'))!;
  assert.deepEqual(results.heading_path, ['Document Understanding Report', '3 Results']);
  assert.deepEqual(results.pages, [1]);
  assert.deepEqual(byHead.chunks.at(-1)!.heading_path, ['Document Understanding Report', '5 Conclusion']);
  assert.deepEqual(byHead.chunks.at(-1)!.pages, [2]);
  const byTok = await (await post(app.request, '/svc/v1/document-split', pdf, 'r.pdf', { strategy: 'tokens', max_tokens: 40, overlap: 8 }))
    .json() as { chunks: Chunk[] };
  assert.ok(byTok.chunks.length >= 5);
  for (const c of byTok.chunks) assert.ok(c.tokens <= 48, `chunk of ${c.tokens} tokens`);
  for (let i = 1; i < byTok.chunks.length; i++) {
    const prevWords = byTok.chunks[i - 1]!.text.split(/\s+/).slice(-3).join(' ');
    assert.ok(byTok.chunks[i]!.text.includes(prevWords.split(' ').at(-1)!), 'overlap carries the end of the previous chunk');
  }
  const html = await (await post(app.request, '/svc/v1/document-split', new TextEncoder().encode(HTML), 'p.html', { strategy: 'headings' }))
    .json() as { chunks: Chunk[] };
  assert.deepEqual(html.chunks.map((c) => c.heading_path), [['Document Understanding Report'], ['Document Understanding Report', 'Data']]);
  assert.deepEqual(html.chunks[0]!.pages, []);
});

test('validate: a report for good, mislabelled, truncated, encrypted and unsupported files, never an error', async () => {
  const pdf = await twoColumnPdfLib();
  const v = async (bytes: Uint8Array, name: string, opts = {}) => {
    const res = await post(app.request, '/svc/v1/document-validate', bytes, name, opts);
    assert.equal(res.status, 200);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const good = await v(pdf, 'r.pdf');
  assert.equal(good.valid, true);
  assert.equal(good.detected_format, 'pdf');
  assert.equal(good.page_count, 2);
  assert.equal(good.has_text, true);
  assert.equal(good.encrypted, false);
  const mislabelled = await v(pdf, 'r.docx');
  assert.equal(mislabelled.valid, false);
  assert.equal(mislabelled.matches_claim, false);
  assert.equal(mislabelled.claimed_format, 'docx');
  const truncated = await v(pdf.subarray(0, Math.floor(pdf.length * 0.6)), 't.pdf');
  assert.equal(truncated.valid, false);
  assert.equal(truncated.damaged, true);
  const src = join(dir, 'plain.pdf'), enc = join(dir, 'enc.pdf');
  writeFileSync(src, pdf);
  execFileSync('qpdf', ['--encrypt', 'user', 'owner', '256', '--', src, enc]);
  const locked = await v(new Uint8Array(readFileSync(enc)), 'enc.pdf');
  assert.equal(locked.encrypted, true);
  assert.equal(locked.readable, false);
  assert.ok((locked.issues as { code: string }[]).some((i) => i.code === 'password_required'));
  const opened = await v(new Uint8Array(readFileSync(enc)), 'enc.pdf', { password: 'user' });
  assert.equal(opened.readable, true);
  assert.equal(opened.page_count, 2);
  const exe = await v(new Uint8Array(readFileSync('/bin/true')), 'true');
  assert.equal(exe.valid, false);
  assert.equal(exe.detected_format, null);
  const deck = await v(pptx(), 'deck.pptx');
  assert.equal(deck.valid, true);
  assert.equal(deck.page_count, 2);
});

test('thumbnails: first page of a PDF, an image, a DOCX and a PPTX as PNG/WebP fitted to the size', async () => {
  const sharp = (await import('sharp')).default;
  const pdf = await twoColumnPdfLib();
  const res = await post(app.request, '/svc/v1/document-thumbnails', pdf, 'r.pdf', { size: 200 });
  assert.equal(res.headers.get('content-type'), 'image/png');
  const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
  assert.equal(meta.height, 200);
  assert.ok(Math.abs(meta.width! - 155) <= 1); // 612 x 792 fitted in 200
  const many = await (await post(app.request, '/svc/v1/document-thumbnails', pdf, 'r.pdf', { pages: '1-2', format: 'webp', size: 64 }))
    .json() as { thumbnails: { page: number; mime_type: string; data: string; height: number }[] };
  assert.deepEqual(many.thumbnails.map((t) => [t.page, t.mime_type, t.height]), [[1, 'image/webp', 64], [2, 'image/webp', 64]]);
  assert.equal((await sharp(Buffer.from(many.thumbnails[1]!.data, 'base64')).metadata()).format, 'webp');
  for (
    const [bytes, name] of [[new Uint8Array(readFileSync(paragraphPng(dir))), 'p.png'], [docx(), 'a.docx'], [pptx(), 'd.pptx']] as const
  ) {
    const r = await post(app.request, '/svc/v1/document-thumbnails', bytes, name, { size: 128 });
    assert.equal(r.status, 200, name);
    const m = await sharp(Buffer.from(await r.arrayBuffer())).metadata();
    assert.equal(Math.max(m.width!, m.height!), 128, name);
  }
});

test('highlight: passages with page and boxes; the highlighted PDF carries Highlight annotations; images via OCR', async () => {
  const pdf = await twoColumnPdfLib();
  const body = await (await post(app.request, '/svc/v1/document-highlight', pdf, 'r.pdf', { query: 'reading order' })).json() as {
    match_count: number;
    matches: { page: number; text: string; passage: string; boxes: { x: number; y: number; width: number; height: number }[] }[];
  };
  assert.ok(body.match_count >= 1);
  const m = body.matches[0]!;
  assert.equal(m.page, 1);
  assert.equal(m.text, 'reading order');
  assert.match(m.passage, /keeps the reading order a person/);
  assert.ok(m.boxes.length >= 1 && m.boxes[0]!.x >= 50 && m.boxes[0]!.x < 300);
  const res = await post(app.request, '/svc/v1/document-highlight', pdf, 'r.pdf', { query: 'column', output_format: 'Pdf' });
  assert.equal(res.headers.get('content-type'), 'application/pdf');
  // Judged by qpdf, not by the library that wrote the annotations.
  const hl = join(dir, 'highlighted.pdf');
  writeFileSync(hl, new Uint8Array(await res.arrayBuffer()));
  execFileSync('qpdf', ['--check', hl]);
  const annots = qpdfAnnotations(hl, 1);
  assert.ok(annots.length >= 2, `${annots.length} annotations on page 1`);
  for (const a of annots) {
    assert.equal(a['/Subtype'], '/Highlight');
    const quads = a['/QuadPoints'] as number[];
    assert.ok(Array.isArray(quads) && quads.length >= 8 && quads.length % 8 === 0, 'QuadPoints: 4 corners per highlighted box');
    const [x1, y1, x2, y2] = a['/Rect'] as number[];
    assert.ok(x2! > x1! && y2! > y1!, 'a non-empty Rect');
    for (let i = 0; i < quads.length; i += 2) {
      assert.ok(
        quads[i]! >= x1! - 0.5 && quads[i]! <= x2! + 0.5 && quads[i + 1]! >= y1! - 0.5 && quads[i + 1]! <= y2! + 0.5,
        'the quads lie inside the Rect',
      );
    }
  }
  const img = await (await post(app.request, '/svc/v1/document-highlight', new Uint8Array(readFileSync(paragraphPng(dir))), 'p.png', {
    query: 'lazy dog',
    engine: 'tesseract',
  })).json() as typeof body;
  assert.equal(img.match_count, 1);
  assert.ok(img.matches[0]!.boxes[0]!.width > 50);
  const bad = await post(app.request, '/svc/v1/document-highlight', docx(), 'a.docx', { query: 'x', output_format: 'Pdf' });
  assert.equal(bad.status, 400);
});
