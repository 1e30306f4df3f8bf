/**
 * Formats without pages to Markdown: DOCX (mammoth → HTML → turndown), HTML (turndown with the GFM tables
 * plugin), XLSX (exceljs; one table per sheet), PPTX (the slide XML read from the zip with an XML parser;
 * one section per slide), ODT (content.xml, the same way), EML (postal-mime: headers + body), CSV
 * (csv-parse; one table), Markdown and plain text (as they are).
 */
import { parse as parseCsvSync } from 'csv-parse/sync';
import { XMLParser } from 'fast-xml-parser';
import { unzipSync } from 'fflate';
import PostalMime from 'postal-mime';
import { ServiceError } from '../errors.ts';
import { decodeTextHead } from './detect.ts';
import { markdownTable } from './elements.ts';

const corrupt = (what: string, e: unknown) =>
  new ServiceError(422, 'document_corrupt', `the ${what} cannot be read: ${(e as Error)?.message ?? e}`);

// ---------------------------------------------------------------- HTML

type TurndownService = {
  addRule(
    name: string,
    rule: { filter: string | string[] | ((node: HTMLElement) => boolean); replacement: (content: string, node: HTMLElement) => string },
  ): void;
  remove(filter: string | string[]): void;
  use(plugin: unknown): void;
  turndown(html: string): string;
};
let turndownCtor: Promise<{ Ctor: new (opts: object) => TurndownService; tables: unknown }> | undefined;

async function turndown(): Promise<TurndownService> {
  turndownCtor ??= Promise.all([import('turndown'), import('@joplin/turndown-plugin-gfm')]).then(([m, g]) => ({
    Ctor: ((m as { default?: unknown }).default ?? m) as new (opts: object) => TurndownService,
    tables: ((g as { default?: { tables: unknown } }).default ?? (g as { tables: unknown })).tables,
  }));
  const { Ctor, tables } = await turndownCtor;
  const td = new Ctor({ headingStyle: 'atx', bulletListMarker: '-', codeBlockStyle: 'fenced', emDelimiter: '*' });
  td.remove(['script', 'style', 'head', 'title', 'noscript', 'template']);
  td.addRule('listItem', {
    filter: 'li',
    replacement: (content, node) => {
      const parent = node.parentNode as HTMLElement | null;
      let prefix = '- ';
      if (parent?.nodeName === 'OL') {
        const start = Number(parent.getAttribute('start') ?? 1);
        prefix = `${start + Array.prototype.indexOf.call(parent.children, node)}. `;
      }
      const body = content.replace(/^\n+/, '').replace(/\n+$/, '\n').replace(/\n/gm, `\n${' '.repeat(prefix.length)}`);
      return prefix + body + (node.nextSibling && !/\n$/.test(body) ? '\n' : '');
    },
  });
  td.use(tables);
  return td;
}

export async function htmlToMarkdown(html: string): Promise<string> {
  const td = await turndown();
  return tidy(td.turndown(html));
}

const tidy = (md: string) => `${md.replace(/\r\n/g, '\n').replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim()}\n`;

// ---------------------------------------------------------------- DOCX

type MammothNode = { type: string; children?: MammothNode[]; isHeader?: boolean };
type Mammoth = {
  convertToHtml(i: { buffer: Buffer }, o?: { transformDocument?: (d: MammothNode) => MammothNode }): Promise<{ value: string }>;
};

/**
 * A GFM table needs a header row. Word marks one only when "repeat as header row" is set, so a table with
 * no marked row gets its first row as the header (what a reader of the document sees it as).
 */
function firstRowsAsHeaders(node: MammothNode): MammothNode {
  if (node.type === 'table' && node.children?.length && !node.children.some((r) => r.isHeader)) node.children[0]!.isHeader = true;
  node.children?.forEach(firstRowsAsHeaders);
  return node;
}

export async function docxToMarkdown(bytes: Uint8Array): Promise<string> {
  const m = (await import('mammoth')) as unknown as Mammoth & { default?: Mammoth };
  const mammoth = m.default ?? m;
  let html: string;
  try {
    // mammoth reads a Node Buffer (its zip reader wants one).
    html = (await mammoth.convertToHtml({ buffer: Buffer.from(bytes) }, { transformDocument: firstRowsAsHeaders })).value;
  } catch (e) {
    throw corrupt('DOCX document', e);
  }
  return htmlToMarkdown(html);
}

// ---------------------------------------------------------------- XLSX

export async function xlsxToMarkdown(bytes: Uint8Array): Promise<string> {
  const ExcelJS = ((await import('exceljs')) as unknown as { default: typeof import('exceljs') }).default;
  const wb = new ExcelJS.Workbook();
  try {
    await wb.xlsx.load(Buffer.from(bytes) as unknown as ArrayBuffer);
  } catch (e) {
    throw corrupt('XLSX workbook', e);
  }
  const parts: string[] = [];
  wb.eachSheet((ws) => {
    const rows: string[][] = [];
    let width = 0;
    ws.eachRow({ includeEmpty: false }, (row) => {
      const cells: string[] = [];
      row.eachCell({ includeEmpty: true }, (cell, col) => {
        cells[col - 1] = cellValue(cell.value, cell.text);
      });
      rows.push(Array.from(cells, (c) => c ?? ''));
      width = Math.max(width, cells.length);
    });
    // drop columns that are empty in every row (leading gaps)
    const used = Array.from({ length: width }, (_, c) => rows.some((r) => (r[c] ?? '') !== ''));
    const grid = rows.map((r) => Array.from({ length: width }, (_, c) => r[c] ?? '').filter((_, c) => used[c]));
    parts.push(`## ${ws.name}\n\n${grid.length ? markdownTable(grid) : '*(empty sheet)*'}`);
  });
  return tidy(parts.join('\n\n'));
}

function cellValue(v: unknown, text: string): string {
  if (v === null || v === undefined) return '';
  if (v instanceof Date) return v.toISOString().replace(/T00:00:00\.000Z$/, '');
  if (typeof v === 'object') {
    const o = v as { result?: unknown; richText?: { text: string }[]; text?: string; hyperlink?: string; error?: string };
    if (o.richText) return o.richText.map((r) => r.text).join('');
    if ('result' in o) return cellValue(o.result, String(o.result ?? ''));
    if (o.text !== undefined) return String(o.text);
    if (o.error) return o.error;
  }
  return text ?? String(v);
}

// ---------------------------------------------------------------- PPTX / ODT (XML inside a zip)

/** One element of fast-xml-parser's ordered output: `{ tag: children, ':@': attributes }` or `{ '#text': s }`. */
type XNode = Record<string, unknown>;

const xml = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: true,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

function parseXml(text: string, what: string): XNode[] {
  try {
    return xml.parse(text) as XNode[];
  } catch (e) {
    throw corrupt(what, e);
  }
}

const tagOf = (n: XNode) => Object.keys(n).find((k) => k !== ':@') ?? '';
const kids = (n: XNode): XNode[] => (Array.isArray(n[tagOf(n)]) ? (n[tagOf(n)] as XNode[]) : []);
const attr = (n: XNode, name: string): string | undefined => (n[':@'] as Record<string, string> | undefined)?.[name];
const child = (n: XNode, tag: string) => kids(n).find((k) => tagOf(k) === tag);

/** Every element named `tag` below `nodes`, in document order, not looking inside a match. */
function findAll(nodes: XNode[], tag: string, out: XNode[] = []): XNode[] {
  for (const n of nodes) {
    if (tagOf(n) === tag) out.push(n);
    else findAll(kids(n), tag, out);
  }
  return out;
}

function unzip(bytes: Uint8Array, what: string, filter: (name: string) => boolean): Record<string, string> {
  try {
    const files = unzipSync(bytes, { filter: (f) => filter(f.name) });
    return Object.fromEntries(Object.entries(files).map(([k, v]) => [k, new TextDecoder().decode(v)]));
  } catch (e) {
    throw corrupt(what, e);
  }
}

/** Text of a DrawingML paragraph: runs and fields in order, `<a:br>` (with or without run properties) a line break. */
function drawingText(p: XNode): string {
  let s = '';
  for (const k of kids(p)) {
    const t = tagOf(k);
    if (t === 'a:r' || t === 'a:fld') s += kids(child(k, 'a:t') ?? {}).map((x) => String(x['#text'] ?? '')).join('');
    else if (t === 'a:br') s += '\n';
  }
  return s;
}

/** Paragraphs of a shape or table cell (<a:p>), with their list level and whether they carry a bullet. */
function drawingParagraphs(nodes: XNode[]): { text: string; level: number; bullet: boolean }[] {
  return findAll(nodes, 'a:p').flatMap((p) => {
    const text = drawingText(p).trim();
    if (!text) return [];
    const pPr = child(p, 'a:pPr');
    const bullet = !!pPr && kids(pPr).some((k) => tagOf(k) === 'a:buChar' || tagOf(k) === 'a:buAutoNum');
    return [{ text, level: Number(pPr && attr(pPr, 'lvl') || 0), bullet }];
  });
}

/** Shapes and graphic frames of a shape tree in document order, groups opened. */
function shapes(nodes: XNode[], out: XNode[] = []): XNode[] {
  for (const n of nodes) {
    const t = tagOf(n);
    if (t === 'p:sp' || t === 'p:graphicFrame') out.push(n);
    else if (t === 'p:grpSp') shapes(kids(n), out);
  }
  return out;
}

const placeholderType = (sp: XNode): string | null | undefined => {
  const ph = findAll(kids(child(sp, 'p:nvSpPr') ?? {}), 'p:ph')[0];
  return ph ? (attr(ph, 'type') ?? null) : undefined; // undefined: no placeholder; null: a body placeholder
};

export function pptxToMarkdown(bytes: Uint8Array): string {
  const what = 'PPTX presentation';
  const files = unzip(
    bytes,
    what,
    (n) => n === 'ppt/presentation.xml' || n === 'ppt/_rels/presentation.xml.rels' || /^ppt\/slides\/slide\d+\.xml$/.test(n),
  );
  // slide order: presentation.xml's sldIdLst → relationship ids → targets
  const rels = new Map(
    findAll(parseXml(files['ppt/_rels/presentation.xml.rels'] ?? '', what), 'Relationship').map((r) => [attr(r, 'Id'), attr(r, 'Target')]),
  );
  let order = findAll(parseXml(files['ppt/presentation.xml'] ?? '', what), 'p:sldId')
    .map((s) => `ppt/${(rels.get(attr(s, 'r:id')) ?? '').replace(/^\/?ppt\//, '')}`).filter((n) => files[n]);
  const slideNo = (n: string) => Number(/(\d+)\.xml$/.exec(n)![1]);
  if (!order.length) order = Object.keys(files).filter((n) => /slides\/slide\d+\.xml$/.test(n)).sort((a, b) => slideNo(a) - slideNo(b));
  const parts: string[] = [];
  order.forEach((name, i) => {
    let title = '';
    const body: string[] = [];
    for (const shape of shapes(findAll(parseXml(files[name]!, what), 'p:spTree').flatMap(kids))) {
      if (tagOf(shape) === 'p:graphicFrame') {
        const rows = findAll(kids(shape), 'a:tr').map((tr) =>
          findAll(kids(tr), 'a:tc').map((tc) => drawingParagraphs(kids(tc)).map((p) => p.text.replace(/\n/g, ' ')).join(' '))
        );
        if (rows.length) body.push(markdownTable(rows));
        continue;
      }
      const ph = placeholderType(shape);
      const paras = drawingParagraphs(kids(shape));
      if ((ph === 'title' || ph === 'ctrTitle') && !title) {
        title = paras.map((p) => p.text).join(' ').replace(/\s+/g, ' ');
        continue;
      }
      if (ph === 'dt' || ph === 'ftr' || ph === 'sldNum') continue;
      const isBodyPh = ph === null || ph === 'body' || ph === 'obj';
      for (const p of paras) {
        const bullet = p.bullet || (isBodyPh && paras.length > 1);
        // A line break inside a list item would end the item: it becomes a space there; elsewhere it stays a line break.
        body.push(bullet ? `${'  '.repeat(p.level)}- ${p.text.replace(/\n/g, ' ')}` : p.text);
      }
    }
    const head = `## Slide ${i + 1}${title ? `: ${title}` : ''}`;
    parts.push([head, ...joinListLines(body)].join('\n\n'));
  });
  return tidy(parts.join('\n\n'));
}

/** Consecutive list lines stay together (no blank line between items). */
function joinListLines(lines: string[]): string[] {
  const out: string[] = [];
  for (const l of lines) {
    const prev = out[out.length - 1];
    if (prev !== undefined && /^\s*- /.test(l) && /(^|\n)\s*- [^\n]*$/.test(prev)) out[out.length - 1] = `${prev}\n${l}`;
    else out.push(l);
  }
  return out;
}

/** Inline text of an ODF element: spans and links opened, `text:s` spaces, tabs and line breaks kept; notes' bodies and annotations left out. */
function odfText(nodes: XNode[]): string {
  let s = '';
  for (const n of nodes) {
    const t = tagOf(n);
    if (t === '#text') s += String(n['#text']);
    else if (t === 'text:s') s += ' '.repeat(Number(attr(n, 'text:c') ?? 1));
    else if (t === 'text:tab') s += '\t';
    else if (t === 'text:line-break') s += '\n';
    else if (t === 'text:note' || t === 'office:annotation' || t === 'office:annotation-end') continue;
    else s += odfText(kids(n));
  }
  return s;
}

function odfList(list: XNode, depth: number, out: string[]): void {
  for (const item of kids(list).filter((k) => tagOf(k) === 'text:list-item' || tagOf(k) === 'text:list-header')) {
    for (const k of kids(item)) {
      if (tagOf(k) === 'text:list') odfList(k, depth + 1, out);
      else if (tagOf(k) === 'text:p' || tagOf(k) === 'text:h') {
        const t = odfText(kids(k)).replace(/\s+/g, ' ').trim();
        if (t) out.push(`${'  '.repeat(depth)}- ${t}`);
      }
    }
  }
}

function odfTable(table: XNode): string[][] {
  const rows: string[][] = [];
  for (const row of findAll(kids(table), 'table:table-row')) {
    const cells: string[] = [];
    for (const c of kids(row)) {
      if (tagOf(c) !== 'table:table-cell' && tagOf(c) !== 'table:covered-table-cell') continue;
      const text = kids(c).map((k) => odfText(kids(k))).join(' ').replace(/\s+/g, ' ').trim();
      // A repeated cell stands for several; trailing empty repeats are the sheet's unused width.
      const repeat = Math.min(Number(attr(c, 'table:number-columns-repeated') ?? 1), text ? 50 : 1);
      for (let r = 0; r < repeat; r++) cells.push(text);
    }
    while (cells.length && cells[cells.length - 1] === '') cells.pop();
    if (cells.length) rows.push(cells);
  }
  return rows;
}

function odfBlocks(nodes: XNode[], out: string[]): void {
  for (const n of nodes) {
    const t = tagOf(n);
    if (t === 'text:h') {
      const level = Number(attr(n, 'text:outline-level') ?? 1);
      const text = odfText(kids(n)).replace(/\s+/g, ' ').trim();
      if (text) out.push(`${'#'.repeat(Math.min(6, Math.max(1, level)))} ${text}`);
    } else if (t === 'text:p') {
      const text = odfText(kids(n)).trim();
      if (text) out.push(text.replace(/[ \t]*\n[ \t]*/g, '\n'));
    } else if (t === 'text:list') {
      const lines: string[] = [];
      odfList(n, 0, lines);
      if (lines.length) out.push(lines.join('\n'));
    } else if (t === 'table:table') {
      const rows = odfTable(n);
      if (rows.length) out.push(markdownTable(rows));
    } else if (t === 'text:section' || t === 'text:index-body' || t === 'text:table-of-content') {
      odfBlocks(kids(n), out);
    }
  }
}

export function odtToMarkdown(bytes: Uint8Array): string {
  const what = 'ODT document';
  const content = unzip(bytes, what, (n) => n === 'content.xml')['content.xml'];
  if (content === undefined) throw corrupt(what, new Error('no content.xml'));
  const text = findAll(parseXml(content, what), 'office:text')[0];
  const out: string[] = [];
  odfBlocks(text ? kids(text) : [], out);
  return tidy(out.join('\n\n'));
}

// ---------------------------------------------------------------- EML

type Mailbox = { name?: string; address?: string; group?: Mailbox[] };
const mailbox = (a: Mailbox): string =>
  a.group
    ? `${a.name ? `${a.name}: ` : ''}${a.group.map(mailbox).join(', ')}`
    : a.name
    ? `${a.name} <${a.address ?? ''}>`
    : (a.address ?? '');

export async function emlToMarkdown(bytes: Uint8Array): Promise<string> {
  let mail: Awaited<ReturnType<typeof PostalMime.parse>>;
  try {
    mail = await PostalMime.parse(bytes);
  } catch (e) {
    throw corrupt('EML message', e);
  }
  let body = '';
  if (mail.html) body = await htmlToMarkdown(mail.html);
  else if (mail.text) body = mail.text;
  // The Date header as written (postal-mime normalises it to ISO 8601).
  const rawDate = mail.headers.find((h) => h.key === 'date')?.value;
  const head: [string, string | undefined][] = [
    ['From', mail.from && mailbox(mail.from)],
    ['To', mail.to?.map(mailbox).join(', ')],
    ['Cc', mail.cc?.map(mailbox).join(', ')],
    ['Date', rawDate ?? mail.date],
    ['Subject', mail.subject],
  ];
  const attachments = mail.attachments.filter((a) => a.disposition !== 'inline' || !a.contentId).map((a) => a.filename ?? 'attachment');
  return tidy(
    [
      `# ${mail.subject || 'Message'}`,
      head.filter(([, v]) => v).map(([k, v]) => `**${k}:** ${v}`).join('  \n'),
      body.trim(),
      attachments.length ? `**Attachments:** ${attachments.join(', ')}` : '',
    ].filter(Boolean).join('\n\n'),
  );
}

// ---------------------------------------------------------------- CSV and text

export function decodeText(bytes: Uint8Array): string {
  const t = decodeTextHead(bytes);
  return (t ?? new TextDecoder().decode(bytes)).replace(/^\uFEFF/, '');
}

export function csvToMarkdown(bytes: Uint8Array): string {
  let rows: string[][];
  try {
    rows = parseCsvSync(decodeText(bytes), { relax_column_count: true, skip_empty_lines: true }) as string[][];
  } catch (e) {
    throw corrupt('CSV file', e);
  }
  return tidy(markdownTable(rows.filter((r) => r.some((f) => f !== ''))));
}
