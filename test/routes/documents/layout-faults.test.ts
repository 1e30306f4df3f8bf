/**
 * Faults users met on real manuals (pdfTeX and Quartz output), each reproduced on a small generated PDF:
 * justified lines with wide spaces, running headers and footers, numbered sections, monospaced code.
 * Judged against the documents' sources and, for reading order, against poppler's `pdftotext`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InProcess } from '../../support/server.ts';
import { documentsApp } from './app.ts';
import { bookGhostscript, chromiumPdf, JUSTIFIED, justifiedGhostscript, post } from './make-docs.ts';

let app: InProcess;
let dir: string;
let manual: Uint8Array;
documentsApp('svc-faults-', (a, d) => {
  app = a;
  dir = d;
  manual = chromiumPdf(dir, 'manual', MANUAL_HTML);
});

const FILLER =
  'The generator reads the configuration, resolves each dependency and writes the result atomically. Large inputs are streamed to disk in fixed-size chunks and hashed while they are written. ';
const CODE = ['#include <vec.h>', '', 'int main(void) {', '    vec_t *v = vec_new(16);', '    return vec_len(v);', '}'];
const MANUAL_HTML = `<!DOCTYPE html><html><head><meta charset="utf-8"><style>
@page { size: A4; margin: 25mm 20mm; @top-left { content: "Chapter 3: Utilities"; font: italic 8pt serif; } @bottom-right { content: counter(page); font: 8pt serif; } }
body { font: 10.5pt/1.35 'DejaVu Serif', serif; text-align: justify; }
h1 { font-size: 22pt; } h2 { font-size: 15pt; } h3 { font-size: 12pt; } .author { font-weight: bold; text-align: center; }
pre { font: 9pt 'DejaVu Sans Mono', monospace; }
</style></head><body>
<h1>The Toolkit Manual</h1><p class="author">Ada Lovelace</p>
<h2>1. Introduction</h2><p>${FILLER.repeat(6)}</p>
<h3>1.1 Scope</h3><p>${FILLER.repeat(8)}</p>
<pre>${CODE.join('\n').replace(/</g, '&lt;').replace(/>/g, '&gt;')}</pre>
<h2>2. Unified system</h2><p>${FILLER.repeat(10)}</p>
<h3>2.1 Function tables</h3><p>${FILLER.repeat(12)}</p>
<h2>3. Utilities</h2><p>${FILLER.repeat(6)}</p>
</body></html>`;

const toMd = async (bytes: Uint8Array, options: Record<string, unknown> = {}) => {
  const res = await post(app.request, '/svc/v1/document-to-markdown', bytes, 'doc.pdf', options);
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { markdown: string }).markdown;
};
const words = (s: string) => s.replace(/\s+/g, ' ').trim();

test('justified lines with spaces of one to two ems are read in order, as pdftotext reads them', async () => {
  const pdf = justifiedGhostscript(dir);
  const path = join(dir, 'j.pdf');
  writeFileSync(path, pdf);
  const poppler = words(execFileSync('pdftotext', [path, '-']).toString());
  assert.equal(poppler, JUSTIFIED, 'the fixture itself reads in order with pdftotext');
  const md = await toMd(pdf);
  assert.equal(words(md), JUSTIFIED);
  assert.ok(!md.includes('|'), 'no table made of the word gaps');
});

test('running headers and page numbers repeated on every page are left out of the Markdown and typed in JSON', async () => {
  const md = await toMd(manual);
  assert.ok(!md.includes('Chapter 3: Utilities'), md);
  assert.ok(!/^\s*\d+\s*$/m.test(md), 'no lone page numbers');
  const pages = Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [join(dir, 'manual.pdf')]).toString())![1]);
  assert.ok(pages >= 3, `the fixture has ${pages} pages`);
  const res = await post(app.request, '/svc/v1/document-parsing', manual, 'doc.pdf');
  const els = ((await res.json()) as { elements: { type: string; text: string; page: number }[] }).elements;
  assert.equal(els.filter((e) => e.type === 'page_header' && e.text === 'Chapter 3: Utilities').length, pages);
});

test('book running heads (alternating, each on fewer than half of the pages, below the top 9%) are left out', async () => {
  const { pdf, body } = bookGhostscript(dir);
  const md = await toMd(pdf);
  assert.ok(!/Chapter \d|Requirements|Command line/.test(md), md.slice(0, 600));
  assert.equal(words(md), body.join(' '), 'the body text stays whole and in order');
});

test('numbered sections: "1." is a top-level section and "1.1" the level below; a byline is not a heading', async () => {
  const md = await toMd(manual);
  const heads = [...md.matchAll(/^(#+) (.*)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(heads, [
    '# The Toolkit Manual',
    '## 1. Introduction',
    '### 1.1 Scope',
    '## 2. Unified system',
    '### 2.1 Function tables',
    '## 3. Utilities',
  ]);
  assert.ok(/^Ada Lovelace$/m.test(md), 'the author stays a paragraph');
});

test('monospaced code is fenced, line by line with its indentation, and its language named', async () => {
  const md = await toMd(manual);
  const fence = /```(\w*)\n([\s\S]*?)\n```/.exec(md);
  assert.ok(fence, md);
  assert.equal(fence[1], 'c');
  assert.deepEqual(fence[2]!.split('\n'), CODE);
  const res = await post(app.request, '/svc/v1/document-parsing', manual, 'doc.pdf');
  const code = ((await res.json()) as { elements: { type: string; text: string }[] }).elements.filter((e) => e.type === 'code');
  assert.equal(code.length, 1);
});
