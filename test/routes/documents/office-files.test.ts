/**
 * Office formats to Markdown on files made by the software that makes them in the wild: LibreOffice wrote
 * the DOCX, ODT, PPTX and XLSX, Python's email and csv packages the EML and CSV
 * (scripts/documents/make-office-fixtures.sh; committed under test/fixtures/documents/).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type InProcess, inProcess } from '../../support/server.ts';
import { CONCLUSION, INTRO, LIST, METHODS, post, TITLE } from './make-docs.ts';

const fixture = (name: string) => new Uint8Array(readFileSync(fileURLToPath(new URL(`../../fixtures/documents/${name}`, import.meta.url))));

let app: InProcess;
before(async () => {
  app = await inProcess();
});
after(() => app.close());

async function toMd(name: string): Promise<string> {
  const res = await post(app.request, '/svc/v1/document-to-markdown', fixture(name), name);
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { markdown: string }).markdown;
}

/** Each needle appears, in this order. */
function assertOrder(md: string, needles: (string | RegExp)[]) {
  let rest = md;
  for (const n of needles) {
    const m = typeof n === 'string' ? { index: rest.indexOf(n), len: n.length } : (() => {
      const x = n.exec(rest);
      return { index: x ? x.index : -1, len: x?.[0].length ?? 0 };
    })();
    assert.ok(m.index >= 0, `${n} missing or out of order in:\n${md}`);
    rest = rest.slice(m.index + m.len);
  }
}

/** A Markdown table row with these cells, however the cells are padded. */
const row = (...cells: string[]) =>
  new RegExp(`^\\|\\s*${cells.map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\s*\\|\\s*')}\\s*\\|$`, 'm');
const TABLE_ROWS = [
  row('Name', 'Value', 'Unit'),
  /^\|[\s:|-]+\|$/m,
  row('Alpha', '1.5', 'kg'),
  row('Beta', '2.25', 'm'),
  row('Gamma', '3.0', 's'),
];

test('DOCX written by LibreOffice: headings, list, table, in order', async () => {
  const md = await toMd('report.docx');
  assertOrder(md, [
    `# ${TITLE}`,
    /^#+ 1 Introduction$/m,
    INTRO,
    /^#+ 2 Methods$/m,
    METHODS,
    ...LIST.map((l) => `- ${l}`),
    ...TABLE_ROWS,
    CONCLUSION,
  ]);
});

test('ODT written by LibreOffice: headings with their levels, list, table, in order', async () => {
  const md = await toMd('report.odt');
  assertOrder(md, [
    `# ${TITLE}`,
    '## 1 Introduction',
    INTRO,
    '## 2 Methods',
    METHODS,
    ...LIST.map((l) => `- ${l}`),
    ...TABLE_ROWS,
    CONCLUSION,
  ]);
});

test('PPTX written by LibreOffice: slides in order, <a:br> line breaks, bullets, a table', async () => {
  const md = await toMd('deck.pptx');
  // LibreOffice writes <a:br><a:rPr/></a:br>: a line break, not lost text and not run-together words.
  assertOrder(md, [
    '## Slide 1',
    'Opening',
    'First line\nSecond line',
    '## Slide 2',
    'Points',
    ...LIST.map((l) => `- ${l}`),
    '## Slide 3',
    'Numbers',
    ...TABLE_ROWS,
  ]);
  assert.doesNotMatch(md, /First lineSecond line/);
});

test('XLSX written by LibreOffice: one table per sheet, numbers as numbers', async () => {
  const md = await toMd('book.xlsx');
  assertOrder(md, [
    '## Measurements',
    ...TABLE_ROWS.slice(0, 4),
    row('Gamma', '3', 's'),
    '## Notes',
    row('Key', 'Note'),
    row('k1', 'first note'),
  ]);
});

test('EML written by Python email: decoded headers, the HTML alternative with its table, the attachment named', async () => {
  const md = await toMd('mail.eml');
  assertOrder(md, [
    '# Quarterly numbers \u2014 Q3',
    '**From:** Zo\u00eb Example <zoe@example.com>',
    '**To:** bob@example.com',
    '**Date:** Mon, 05 Oct 2026 10:00:00 +0000',
    'Hello Bob,',
    'The numbers are in \u2014 see below.',
    ...TABLE_ROWS,
    '**Attachments:** numbers.csv',
  ]);
  assert.doesNotMatch(md, /=\?utf-8\?/i, 'no encoded words left');
});

test('CSV written by Python csv: quoted commas, quotes and newlines stay in their cells', async () => {
  const md = await toMd('table.csv');
  assertOrder(md, [
    row('Name', 'Note', 'Value'),
    row('Alpha', 'plain', '1.5'),
    row('Beta', 'has, comma', '2.25'),
    row('Gamma', 'says "hi"', '3.0'),
    /^\| Delta \| two.{1,6}lines \| 4 \|$/m,
    row('Eta', '\u00fcn\u00efc\u00f6d\u00e9', '5'),
  ]);
});
