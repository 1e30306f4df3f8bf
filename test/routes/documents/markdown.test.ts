/** POST /svc/v1/document-to-markdown over every family of input. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InProcess } from '../../support/server.ts';
import { documentsApp } from './app.ts';
import {
  CAPTION,
  CONCLUSION,
  docx,
  EML,
  HEADER,
  HTML,
  INTRO,
  LIST,
  post,
  pptx,
  RESULTS,
  scannedPdf,
  TITLE,
  twoColumnGhostscript,
  twoColumnPdfLib,
  xlsx,
} from './make-docs.ts';

let app: InProcess;
let dir: string;
documentsApp('svc-md-', (a, d) => {
  app = a;
  dir = d;
});

async function toMd(bytes: Uint8Array, name: string, options: Record<string, unknown> = {}): Promise<string> {
  const res = await post(app.request, '/svc/v1/document-to-markdown', bytes, name, options);
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { markdown: string }).markdown;
}

const TABLE_MD = ['| Name | Value | Unit |', '| --- | --- | --- |', '| Alpha | 1.5 | kg |', '| Beta | 2.25 | m |', '| Gamma | 3.0 | s |']
  .join('\n');

/** Each needle appears, in this order. */
function assertOrder(mdIn: string, needles: string[]) {
  // Table cells may be padded (the GFM plugin pads to three characters): compare with the padding removed.
  const md = mdIn.replace(/ {2,}\|/g, ' |');
  let at = -1;
  for (const n of needles) {
    const i = md.indexOf(n, at + 1);
    assert.ok(i > at, `"${n}" missing or out of order in:\n${md}`);
    at = i;
  }
}

for (const [maker, label] of [[() => twoColumnPdfLib(), 'pdf-lib'], [() => twoColumnGhostscript(dir), 'Ghostscript']] as const) {
  test(`two-column PDF (${label}): reading order over columns, headings, list, table, header/footer removed`, async () => {
    const md = await toMd(await maker(), 'report.pdf');
    assertOrder(md, [
      `# ${TITLE}`,
      '## 1 Introduction',
      INTRO,
      '## 2 Methods',
      `- ${LIST[0]}`,
      `- ${LIST[2]}`,
      '## 3 Results',
      RESULTS,
      '## 4 Discussion',
      CAPTION,
      TABLE_MD,
      '## 5 Conclusion',
      CONCLUSION,
    ]);
    assert.ok(!md.includes(HEADER), 'page header removed');
    assert.ok(!/Page \d/.test(md), 'page footer removed');
  });
}

test('page range: only the second page', async () => {
  const md = await toMd(await twoColumnPdfLib(), 'report.pdf', { pages: '2' });
  assert.ok(md.includes(CONCLUSION) && !md.includes(INTRO));
});

test('a scanned page (rotated 90°, skewed 3°) goes through OCR and keeps headings, list and table', async () => {
  const pdf = join(dir, 'src.pdf');
  writeFileSync(pdf, await twoColumnPdfLib(1));
  const scan = await scannedPdf(dir, pdf);
  const res = await post(app.request, '/svc/v1/document-to-markdown', scan.pdf, 'scan.pdf', { engine: 'tesseract' });
  const body = await res.json() as { markdown: string; ocr_pages: number[] };
  assert.deepEqual(body.ocr_pages, [1]);
  assertOrder(body.markdown, [
    'Document Understanding Report',
    '## 1 Introduction',
    'Documents arrive',
    '## 2 Methods',
    '- Text layers',
    '## 3 Results',
    '## 4 Discussion',
    '| Name | Value | Unit |',
  ]);
});

test('DOCX (mammoth + turndown): headings, list and table', async () => {
  const md = await toMd(docx(), 'report.docx');
  assertOrder(md, [TITLE, '1 Introduction', INTRO, '2 Methods', LIST[0]!, TABLE_MD.split('\n')[0]!, '| Alpha | 1.5 | kg |', CONCLUSION]);
  assert.match(md, /^#+ 1 Introduction$/m);
});

test('XLSX: one table per sheet', async () => {
  const md = await toMd(await xlsx(), 'book.xlsx');
  // numbers stay numbers in a workbook: 3.0 is the number 3
  assertOrder(md, ['## Measurements', TABLE_MD.replace('| 3.0 |', '| 3 |'), '## Notes', '| Key | Note |', '| k1 | first note |']);
});

test('PPTX: one section per slide, in presentation order', async () => {
  const md = await toMd(pptx(), 'deck.pptx');
  assertOrder(md, ['## Slide 1: Opening', `- ${LIST[0]}`, `- ${LIST[1]}`, '## Slide 2: Numbers', TABLE_MD]);
});

test('HTML: scripts and styles dropped, the table kept as a Markdown table', async () => {
  const md = await toMd(new TextEncoder().encode(HTML), 'page.html');
  assertOrder(md, [`# ${TITLE}`, INTRO, '## Data', TABLE_MD, `- ${LIST[0]}`]);
  assert.ok(!md.includes('var x') && !md.includes('color:red'));
});

test('EML: headers and the decoded body', async () => {
  const md = await toMd(new TextEncoder().encode(EML), 'mail.eml');
  assertOrder(md, [
    '# Quarterly numbers',
    '**From:** Alice Example',
    '**Subject:** Quarterly numbers',
    'Hello Bob,',
    'The numbers are in \u2014 see below.',
  ]);
});
