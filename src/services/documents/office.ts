/**
 * Formats without pages to Markdown: DOCX (mammoth → HTML → turndown), HTML (turndown; tables kept as
 * Markdown tables by our own rule, since turndown's core drops them), XLSX (exceljs; one table per sheet),
 * PPTX (the slide XML read from the zip; one section per slide), ODT (content.xml), EML (headers + body),
 * CSV (one table), Markdown and plain text (as they are).
 */
import { unzipSync } from 'fflate';
import { ServiceError } from '../errors.ts';
import { decodeTextHead } from './detect.ts';
import { markdownTable } from './elements.ts';

const corrupt = (what: string, e: unknown) => new ServiceError(422, 'document_corrupt', `the ${what} cannot be read: ${(e as Error)?.message ?? e}`);

// ---------------------------------------------------------------- HTML

type TurndownService = {
  addRule(name: string, rule: { filter: string | string[] | ((node: HTMLElement) => boolean); replacement: (content: string, node: HTMLElement) => string }): void;
  remove(filter: string | string[]): void;
  turndown(html: string): string;
};
let turndownCtor: Promise<new (opts: object) => TurndownService> | undefined;

function cellText(node: Element): string {
  return (node.textContent ?? '').replace(/\s+/g, ' ').trim();
}

async function turndown(): Promise<TurndownService> {
  turndownCtor ??= import('turndown').then((m) => ((m as { default?: unknown }).default ?? m) as new (opts: object) => TurndownService);
  const Ctor = await turndownCtor;
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
  td.addRule('table', {
    filter: 'table',
    replacement: (_content, node) => {
      const rows: string[][] = [];
      for (const tr of Array.from(node.querySelectorAll('tr'))) {
        if (tr.closest('table') !== node) continue; // rows of nested tables belong to them
        const cells: string[] = [];
        for (const c of Array.from(tr.children)) {
          if (c.tagName !== 'TD' && c.tagName !== 'TH') continue;
          cells.push(cellText(c));
          const span = Number(c.getAttribute('colspan') ?? 1);
          for (let k = 1; k < Math.min(span, 50); k++) cells.push('');
        }
        if (cells.length) rows.push(cells);
      }
      if (!rows.length) return '';
      const caption = node.querySelector('caption');
      return `\n\n${caption ? `*${cellText(caption)}*\n\n` : ''}${markdownTable(rows)}\n\n`;
    },
  });
  return td;
}

export async function htmlToMarkdown(html: string): Promise<string> {
  const td = await turndown();
  return tidy(td.turndown(html));
}

const tidy = (md: string) => `${md.replace(/\r\n/g, '\n').replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim()}\n`;

// ---------------------------------------------------------------- DOCX

export async function docxToMarkdown(bytes: Uint8Array): Promise<string> {
  const mammoth = (await import('mammoth')) as unknown as { convertToHtml(i: { buffer: Buffer }): Promise<{ value: string }>; default?: unknown };
  const conv = ((mammoth as { default?: typeof mammoth }).default ?? mammoth).convertToHtml;
  let html: string;
  try {
    html = (await conv({ buffer: Buffer.from(bytes) })).value;
  } catch (e) {
    throw corrupt('DOCX document', e);
  }
  // mammoth writes table header rows as <td> inside the first <tr>; that is our header row too
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
      row.eachCell({ includeEmpty: true }, (cell, col) => { cells[col - 1] = cellValue(cell.value, cell.text); });
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

const xmlUnescape = (s: string) =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&#(\d+);/g, (_, d) => String.fromCodePoint(Number(d)))
    .replace(/&#x([0-9a-f]+);/gi, (_, h) => String.fromCodePoint(parseInt(h, 16))).replace(/&amp;/g, '&');

function unzip(bytes: Uint8Array, what: string, filter: (name: string) => boolean): Record<string, string> {
  try {
    const files = unzipSync(bytes, { filter: (f) => filter(f.name) });
    return Object.fromEntries(Object.entries(files).map(([k, v]) => [k, new TextDecoder().decode(v)]));
  } catch (e) {
    throw corrupt(what, e);
  }
}

/** Paragraph texts of DrawingML (<a:p> with <a:t> runs, <a:br/> line breaks). */
function drawingParagraphs(xml: string): { text: string; level: number; bullet: boolean }[] {
  const out: { text: string; level: number; bullet: boolean }[] = [];
  for (const m of xml.matchAll(/<a:p>([\s\S]*?)<\/a:p>|<a:p\s[^>]*>([\s\S]*?)<\/a:p>/g)) {
    const body = m[1] ?? m[2] ?? '';
    const text = [...body.matchAll(/<a:t>([\s\S]*?)<\/a:t>|<a:br\/>/g)].map((t) => (t[0] === '<a:br/>' ? '\n' : xmlUnescape(t[1] ?? ''))).join('').trim();
    if (!text) continue;
    const lvl = /<a:pPr[^>]*\blvl="(\d+)"/.exec(body);
    out.push({ text, level: lvl ? Number(lvl[1]) : 0, bullet: /<a:buChar|<a:buAutoNum/.test(body) });
  }
  return out;
}

export function pptxToMarkdown(bytes: Uint8Array): string {
  const files = unzip(bytes, 'PPTX presentation', (n) => n === 'ppt/presentation.xml' || n === 'ppt/_rels/presentation.xml.rels' || /^ppt\/slides\/slide\d+\.xml$/.test(n));
  // slide order: presentation.xml's sldIdLst → relationship ids → targets
  const rels = new Map([...(files['ppt/_rels/presentation.xml.rels'] ?? '').matchAll(/<Relationship\b[^>]*>/g)].map((m) => [/Id="([^"]+)"/.exec(m[0])?.[1], /Target="([^"]+)"/.exec(m[0])?.[1]]));
  let order = [...(files['ppt/presentation.xml'] ?? '').matchAll(/<p:sldId\b[^>]*r:id="([^"]+)"/g)].map((m) => `ppt/${(rels.get(m[1]) ?? '').replace(/^\/?ppt\//, '')}`).filter((n) => files[n]);
  if (!order.length) order = Object.keys(files).filter((n) => /slides\/slide\d+\.xml$/.test(n)).sort((a, b) => Number(/(\d+)\.xml$/.exec(a)![1]) - Number(/(\d+)\.xml$/.exec(b)![1]));
  const parts: string[] = [];
  order.forEach((name, i) => {
    const xml = files[name]!;
    let title = '';
    const body: string[] = [];
    // shapes (<p:sp>) and graphic frames (tables) in document order
    for (const m of xml.matchAll(/<p:sp>[\s\S]*?<\/p:sp>|<p:sp\s[\s\S]*?<\/p:sp>|<p:graphicFrame[\s\S]*?<\/p:graphicFrame>/g)) {
      const shape = m[0];
      if (shape.startsWith('<p:graphicFrame')) {
        const rows = [...shape.matchAll(/<a:tr\b[\s\S]*?<\/a:tr>/g)].map((tr) => [...tr[0].matchAll(/<a:tc\b[\s\S]*?<\/a:tc>/g)].map((tc) => drawingParagraphs(tc[0]).map((p) => p.text).join(' ')));
        if (rows.length) body.push(markdownTable(rows));
        continue;
      }
      const ph = /<p:ph\b[^>]*type="(title|ctrTitle)"/.exec(shape);
      const paras = drawingParagraphs(shape);
      if (ph && !title) { title = paras.map((p) => p.text).join(' ').replace(/\s+/g, ' '); continue; }
      const isBodyPh = /<p:ph\b(?![^>]*type="(title|ctrTitle|subTitle|dt|ftr|sldNum)")[^>]*>/.test(shape);
      if (/<p:ph\b[^>]*type="(dt|ftr|sldNum)"/.test(shape)) continue;
      for (const p of paras) {
        const bullet = p.bullet || (isBodyPh && paras.length > 1);
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

export function odtToMarkdown(bytes: Uint8Array): string {
  const xml = unzip(bytes, 'ODT document', (n) => n === 'content.xml')['content.xml'] ?? '';
  const text = (s: string) => xmlUnescape(s.replace(/<text:s\b[^>]*\/>/g, ' ').replace(/<text:tab\/>/g, '\t').replace(/<text:line-break\/>/g, '\n').replace(/<[^>]+>/g, '')).trim();
  const office = /<office:text\b[^>]*>([\s\S]*)<\/office:text>/.exec(xml)?.[1] ?? xml;
  const out: string[] = [];
  for (const m of office.matchAll(/<text:h\b([^>]*)>([\s\S]*?)<\/text:h>|<text:list\b[^>]*>([\s\S]*?)<\/text:list>|<table:table\b[^>]*>([\s\S]*?)<\/table:table>|<text:p\b[^>]*>([\s\S]*?)<\/text:p>/g)) {
    if (m[2] !== undefined) {
      const level = Number(/text:outline-level="(\d+)"/.exec(m[1] ?? '')?.[1] ?? 1);
      out.push(`${'#'.repeat(Math.min(6, level))} ${text(m[2])}`);
    } else if (m[3] !== undefined) {
      out.push([...m[3].matchAll(/<text:list-item\b[^>]*>([\s\S]*?)<\/text:list-item>/g)].map((li) => `- ${text(li[1]!)}`).join('\n'));
    } else if (m[4] !== undefined) {
      const rows = [...m[4].matchAll(/<table:table-row\b[^>]*>([\s\S]*?)<\/table:table-row>/g)].map((r) => [...r[1]!.matchAll(/<table:table-cell\b[^>]*?(?:\/>|>([\s\S]*?)<\/table:table-cell>)/g)].map((c) => text(c[1] ?? '')));
      if (rows.length) out.push(markdownTable(rows));
    } else if (m[5] !== undefined) {
      const t = text(m[5]);
      if (t) out.push(t);
    } else if (m[0].endsWith('/>')) continue;
  }
  return tidy(out.join('\n\n'));
}

// ---------------------------------------------------------------- EML

interface MimePart { headers: Map<string, string>; body: string }

function parseHeaders(block: string): Map<string, string> {
  const h = new Map<string, string>();
  for (const line of block.replace(/\r\n/g, '\n').replace(/\n[ \t]+/g, ' ').split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) h.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return h;
}

function splitPart(raw: string): MimePart {
  const m = /\r?\n\r?\n/.exec(raw);
  return m ? { headers: parseHeaders(raw.slice(0, m.index)), body: raw.slice(m.index + m[0].length) } : { headers: parseHeaders(raw), body: '' };
}

const param = (v: string | undefined, name: string) => new RegExp(`${name}\\s*=\\s*("([^"]*)"|[^;\\s]+)`, 'i').exec(v ?? '')?.[2] ?? new RegExp(`${name}\\s*=\\s*([^;\\s]+)`, 'i').exec(v ?? '')?.[1]?.replace(/"/g, '');

function decodeBody(p: MimePart): string {
  const enc = (p.headers.get('content-transfer-encoding') ?? '').toLowerCase();
  const charset = (param(p.headers.get('content-type'), 'charset') ?? 'utf-8').toLowerCase();
  let bytes: Uint8Array;
  if (enc === 'base64') bytes = Uint8Array.from(Buffer.from(p.body.replace(/\s+/g, ''), 'base64'));
  else if (enc === 'quoted-printable') {
    const s = p.body.replace(/=\r?\n/g, '');
    const arr: number[] = [];
    for (let i = 0; i < s.length; i++) {
      if (s[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) { arr.push(parseInt(s.slice(i + 1, i + 3), 16)); i += 2; }
      else arr.push(s.charCodeAt(i) & 0xff);
    }
    bytes = Uint8Array.from(arr);
  } else return p.body;
  try { return new TextDecoder(charset).decode(bytes); } catch { return new TextDecoder().decode(bytes); }
}

/** RFC 2047 encoded words in headers. */
function decodeWords(s: string): string {
  return s.replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_, cs: string, enc: string, data: string) => {
    const bytes = enc.toUpperCase() === 'B' ? Buffer.from(data, 'base64') : Buffer.from(data.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (__, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
    try { return new TextDecoder(cs).decode(bytes); } catch { return bytes.toString('utf8'); }
  });
}

function leaves(p: MimePart, depth = 0): MimePart[] {
  const ct = p.headers.get('content-type') ?? 'text/plain';
  if (/^multipart\//i.test(ct) && depth < 10) {
    const boundary = param(ct, 'boundary');
    if (!boundary) return [];
    const chunks = p.body.split(new RegExp(`\\r?\\n?--${boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:--)?[ \\t]*\\r?\\n?`));
    return chunks.slice(1).filter((c) => c.trim()).flatMap((c) => leaves(splitPart(c), depth + 1));
  }
  return [p];
}

export async function emlToMarkdown(bytes: Uint8Array): Promise<string> {
  const raw = new TextDecoder('latin1').decode(bytes);
  const msg = splitPart(raw);
  const parts = leaves(msg);
  const isAttachment = (p: MimePart) => /attachment/i.test(p.headers.get('content-disposition') ?? '');
  const plain = parts.find((p) => /^text\/plain/i.test(p.headers.get('content-type') ?? 'text/plain') && !isAttachment(p));
  const html = parts.find((p) => /^text\/html/i.test(p.headers.get('content-type') ?? '') && !isAttachment(p));
  let body = '';
  if (html) body = await htmlToMarkdown(decodeBody(html));
  else if (plain) body = reencode(decodeBody(plain), plain);
  const attachments = parts.filter(isAttachment).map((p) => param(p.headers.get('content-disposition'), 'filename') ?? param(p.headers.get('content-type'), 'name') ?? 'attachment');
  const h = msg.headers;
  const head = ['from', 'to', 'cc', 'date', 'subject'].filter((k) => h.get(k)).map((k) => `**${k[0]!.toUpperCase()}${k.slice(1)}:** ${decodeWords(h.get(k)!)}`);
  const subject = h.get('subject') ? decodeWords(h.get('subject')!) : 'Message';
  return tidy([`# ${subject}`, head.join('  \n'), body.trim(), attachments.length ? `**Attachments:** ${attachments.join(', ')}` : ''].filter(Boolean).join('\n\n'));
}

/** A plain part read as latin1 is re-read in its charset (UTF-8 by default) when it was not transfer-encoded. */
function reencode(s: string, p: MimePart): string {
  const enc = (p.headers.get('content-transfer-encoding') ?? '').toLowerCase();
  if (enc === 'base64' || enc === 'quoted-printable') return s;
  const charset = (param(p.headers.get('content-type'), 'charset') ?? 'utf-8').toLowerCase();
  try { return new TextDecoder(charset).decode(Buffer.from(s, 'latin1')); } catch { return s; }
}

// ---------------------------------------------------------------- CSV and text

export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field); field = '';
      if (row.some((f) => f !== '')) rows.push(row);
      row = [];
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f !== '')) rows.push(row);
  return rows;
}

export function decodeText(bytes: Uint8Array): string {
  const t = decodeTextHead(bytes);
  return (t ?? new TextDecoder().decode(bytes)).replace(/^\uFEFF/, '');
}

export const csvToMarkdown = (bytes: Uint8Array) => tidy(markdownTable(parseCsv(decodeText(bytes))));
