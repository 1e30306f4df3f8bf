/** POST /svc/v1/document-parsing: typed, positioned elements in Json, Markdown, Html and DocLang (DocTags). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import type { InProcess } from '../../support/server.ts';
import { documentsApp } from './app.ts';
import { CAPTION, docx, HEADER, INTRO, post, TITLE, twoColumnPdfLib } from './make-docs.ts';

let app: InProcess;
documentsApp('svc-parse-', (a) => {
  app = a;
});

interface El {
  type: string;
  text: string;
  page: number | null;
  bbox: { x: number; y: number; width: number; height: number } | null;
  level?: number;
  rows?: number;
  cols?: number;
  cells?: { row: number; col: number; text: string }[];
  caption?: string;
  image?: { mime_type: string; data: string };
}
interface Parsed {
  elements: El[];
  pages: { page: number; width: number; height: number }[];
  unit: string;
}

/** DocTags: every tag known, container tags nested and closed, location tokens in 0..499. */
function parseDocTags(s: string): { tags: string[]; texts: string[] } {
  const single = /^(loc_\d+|fcel|ecel|ched|rhed|lcel|ucel|xcel|srow|nl|page_break)$/;
  const containers =
    /^(doctag|title|text|caption|page_header|page_footer|formula|list_item|ordered_list|unordered_list|otsl|picture|section_header_level_[0-5]|footnote|code)$/;
  const stack: string[] = [];
  const tags: string[] = [], texts: string[] = [];
  for (const m of s.matchAll(/<(\/?)([a-z_0-9]+)>|([^<]+)/g)) {
    if (m[3] !== undefined) {
      assert.ok(stack.length > 0, 'text outside <doctag>');
      assert.ok(!/[<>]/.test(m[3]));
      texts.push(m[3]);
      continue;
    }
    const [, close, name] = m as unknown as [string, string, string];
    if (single.test(name)) {
      assert.equal(close, '', `</${name}> is not a closing tag`);
      if (name.startsWith('loc_')) {
        const v = Number(name.slice(4));
        assert.ok(v >= 0 && v <= 499);
      }
      tags.push(name);
      continue;
    }
    assert.match(name, containers, `unknown tag <${name}>`);
    if (close) assert.equal(stack.pop(), name, `</${name}> closes the wrong tag`);
    else {
      if (!stack.length) assert.equal(name, 'doctag');
      stack.push(name);
      tags.push(name);
    }
  }
  assert.equal(stack.length, 0, 'unclosed tags');
  assert.equal(tags[0], 'doctag');
  return { tags, texts };
}

test('Json: typed elements with page and bbox; table with cells; headers and footers typed, not dropped', async () => {
  const res = await post(app.request, '/svc/v1/document-parsing', await twoColumnPdfLib(), 'r.pdf');
  assert.equal(res.status, 200);
  const body = await res.json() as Parsed;
  assert.equal(body.unit, 'pt');
  const types = new Set(body.elements.map((e) => e.type));
  for (const t of ['title', 'section_header', 'paragraph', 'list_item', 'table', 'caption', 'page_header', 'page_footer']) {
    assert.ok(types.has(t), `no ${t}`);
  }
  const title = body.elements.find((e) => e.type === 'title')!;
  assert.equal(title.text, TITLE);
  assert.equal(title.page, 1);
  assert.ok(Math.abs(title.bbox!.x - 50) < 2 && Math.abs(title.bbox!.y + title.bbox!.height - 92) < 8, JSON.stringify(title.bbox));
  const table = body.elements.find((e) => e.type === 'table')!;
  assert.equal(table.rows, 4);
  assert.equal(table.cols, 3);
  assert.equal(table.cells!.find((c) => c.row === 2 && c.col === 1)!.text, '2.25');
  assert.equal(table.caption, CAPTION);
  assert.equal(body.elements.filter((e) => e.type === 'page_header' && e.text === HEADER).length, 2);
  const results = body.elements.find((e) => e.text === '3 Results')!;
  assert.ok(results.bbox!.x > 300, 'right column');
  assert.ok(body.elements.every((e) => e.bbox && e.page !== null));
});

test('DocLang: DocTags markup that parses, with locations, OTSL table and page break', async () => {
  const res = await post(app.request, '/svc/v1/document-parsing', await twoColumnPdfLib(), 'r.pdf', { output_format: 'DocLang' });
  assert.equal(res.status, 200);
  const text = await res.text();
  const { tags, texts } = parseDocTags(text);
  for (
    const t of [
      'title',
      'section_header_level_1',
      'text',
      'unordered_list',
      'list_item',
      'otsl',
      'ched',
      'fcel',
      'nl',
      'caption',
      'page_header',
      'page_footer',
      'page_break',
    ]
  ) assert.ok(tags.includes(t), `no <${t}>`);
  assert.ok(texts.includes(TITLE));
  assert.match(text, /^<doctag><page_header><loc_\d+><loc_\d+><loc_\d+><loc_\d+>ACME Research Quarterly<\/page_header><title><loc_/);
});

test('Markdown and Html outputs; effort Low keeps text-layer paragraphs only', async () => {
  const pdf = await twoColumnPdfLib();
  const md = await (await post(app.request, '/svc/v1/document-parsing', pdf, 'r.pdf', { output_format: 'Markdown' })).text();
  assert.ok(md.startsWith(`# ${TITLE}`) && md.includes('| Name | Value | Unit |'));
  const html = await (await post(app.request, '/svc/v1/document-parsing', pdf, 'r.pdf', { output_format: 'Html' })).text();
  assert.match(html, /<h1 data-type="title" data-page="1" data-bbox="[\d.,]+">Document Understanding Report<\/h1>/);
  assert.match(html, /<table[^>]*><caption>Table 1: Measured values<\/caption><thead><tr><th>Name<\/th>/);
  const low = await (await post(app.request, '/svc/v1/document-parsing', pdf, 'r.pdf', { effort: 'Low' })).json() as Parsed;
  assert.ok(low.elements.every((e) => e.type === 'paragraph'));
  assert.ok(low.elements.some((e) => e.text.includes(INTRO.slice(0, 40))));
});

test('figures: an embedded image becomes a figure with its caption and, on request, its cropped image', async () => {
  const sharp = (await import('sharp')).default;
  const png = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#3366cc' } }).png().toBuffer();
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const page = doc.addPage([612, 792]);
  page.drawText('A page with a chart', { x: 50, y: 740, size: 12, font });
  page.drawImage(await doc.embedPng(png), { x: 100, y: 450, width: 300, height: 150 });
  page.drawText('Figure 1: Quarterly growth', { x: 100, y: 432, size: 10, font });
  const bytes = await doc.save();
  const res = await post(app.request, '/svc/v1/document-parsing', bytes, 'fig.pdf', { include_figure_images: true });
  const body = await res.json() as Parsed;
  const fig = body.elements.find((e) => e.type === 'figure')!;
  assert.ok(fig, JSON.stringify(body.elements));
  assert.equal(fig.caption, 'Figure 1: Quarterly growth');
  assert.ok(Math.abs(fig.bbox!.x - 100) < 1 && Math.abs(fig.bbox!.width - 300) < 1 && Math.abs(fig.bbox!.y - 192) < 1);
  assert.equal(fig.image!.mime_type, 'image/png');
  const meta = await sharp(Buffer.from(fig.image!.data, 'base64')).metadata();
  assert.ok(Math.abs(meta.width! - 625) <= 3, String(meta.width)); // 300 pt at 150 dpi
});

test('a DOCX parses into elements without positions', async () => {
  const body = await (await post(app.request, '/svc/v1/document-parsing', docx(), 'a.docx')).json() as Parsed;
  assert.ok(body.elements.some((e) => e.type === 'table' && e.rows === 4));
  assert.ok(body.elements.every((e) => e.page === null && e.bbox === null));
});
