/**
 * Format detection by content, never by name. Binary formats by their signatures; ZIP containers by the
 * entries inside (Office Open XML parts, the ODF `mimetype` entry); text formats by decoding the head as
 * UTF-8 (or UTF-16 with a BOM) and looking at its shape. Anything else — executables, archives of other
 * files, random bytes — is 415 unsupported_file_type.
 */
import { open } from 'node:fs/promises';
import { parse as parseCsv } from 'csv-parse/sync';
import { unzipSync } from 'fflate';
import { unsupportedFileType } from '../errors.ts';

export type DocFormat =
  | 'pdf'
  | 'png'
  | 'jpeg'
  | 'webp'
  | 'tiff'
  | 'avif'
  | 'gif'
  | 'bmp'
  | 'docx'
  | 'xlsx'
  | 'pptx'
  | 'odt'
  | 'html'
  | 'markdown'
  | 'text'
  | 'csv'
  | 'eml';

export const IMAGE_FORMATS: ReadonlySet<DocFormat> = new Set(['png', 'jpeg', 'webp', 'tiff', 'avif', 'gif', 'bmp']);
export const isImage = (f: DocFormat) => IMAGE_FORMATS.has(f);

export const MIME: Record<DocFormat, string> = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  tiff: 'image/tiff',
  avif: 'image/avif',
  gif: 'image/gif',
  bmp: 'image/bmp',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  html: 'text/html',
  markdown: 'text/markdown',
  text: 'text/plain',
  csv: 'text/csv',
  eml: 'message/rfc822',
};

/** The extension a name usually carries for each format (for validation's "claimed" format). */
export const EXTENSIONS: Record<string, DocFormat> = {
  pdf: 'pdf',
  png: 'png',
  jpg: 'jpeg',
  jpeg: 'jpeg',
  jpe: 'jpeg',
  webp: 'webp',
  tif: 'tiff',
  tiff: 'tiff',
  avif: 'avif',
  gif: 'gif',
  bmp: 'bmp',
  docx: 'docx',
  xlsx: 'xlsx',
  pptx: 'pptx',
  odt: 'odt',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  md: 'markdown',
  markdown: 'markdown',
  txt: 'text',
  text: 'text',
  csv: 'csv',
  eml: 'eml',
};

const ascii = (b: Uint8Array, from: number, to: number) => String.fromCharCode(...b.subarray(from, Math.min(to, b.length)));

/** Detects the format of the bytes, or null when no pipeline ingests them. `whole` is the full file for ZIP inspection. */
export function sniffFormat(head: Uint8Array, whole?: () => Uint8Array): DocFormat | null {
  if (head.length === 0) return null;
  if (head[0] === 0x7f && ascii(head, 1, 4) === 'ELF') return null;
  if (ascii(head, 0, 2) === 'MZ' && head.length > 0x40) return null; // PE/DOS executables
  if (
    [0xfeedface, 0xfeedfacf, 0xcafebabe, 0xcefaedfe, 0xcffaedfe].includes(
      new DataView(head.buffer, head.byteOffset, Math.min(4, head.length)).getUint32(0, false) >>> 0,
    )
  ) return null; // Mach-O, Java class
  if (head.length >= 5 && findPdfHeader(head)) return 'pdf';
  if (head[0] === 0x89 && ascii(head, 1, 4) === 'PNG') return 'png';
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'jpeg';
  if (ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WEBP') return 'webp';
  if (
    (head[0] === 0x49 && head[1] === 0x49 && head[2] === 0x2a && head[3] === 0) ||
    (head[0] === 0x4d && head[1] === 0x4d && head[2] === 0 && head[3] === 0x2a)
  ) return 'tiff';
  if (ascii(head, 4, 8) === 'ftyp' && /avi[fs]/.test(ascii(head, 8, 40))) return 'avif';
  if (ascii(head, 0, 6) === 'GIF87a' || ascii(head, 0, 6) === 'GIF89a') return 'gif';
  if (ascii(head, 0, 2) === 'BM' && head.length >= 26 && [12, 40, 52, 56, 108, 124].includes(head[14]! | (head[15]! << 8))) return 'bmp';
  if (ascii(head, 0, 4) === 'PK\x03\x04') return whole ? sniffZip(whole()) : null;
  return sniffText(head);
}

function findPdfHeader(b: Uint8Array): boolean {
  const n = Math.min(b.length, 1024);
  for (let i = 0; i + 5 <= n; i++) {
    if (b[i] === 0x25 && b[i + 1] === 0x50 && b[i + 2] === 0x44 && b[i + 3] === 0x46 && b[i + 4] === 0x2d) return true;
  }
  return false;
}

/** Office Open XML / ODF by their parts; other archives are not documents. */
export function sniffZip(bytes: Uint8Array): DocFormat | null {
  const names = new Set<string>();
  let mimetype = '';
  try {
    const got = unzipSync(bytes, {
      filter: (f) => {
        names.add(f.name);
        return f.name === 'mimetype' && f.originalSize < 200;
      },
    });
    if (got.mimetype) mimetype = new TextDecoder().decode(got.mimetype).trim();
  } catch {
    return null;
  }
  if (names.has('[Content_Types].xml')) {
    if (names.has('word/document.xml')) return 'docx';
    if (names.has('xl/workbook.xml')) return 'xlsx';
    if (names.has('ppt/presentation.xml')) return 'pptx';
  }
  if (mimetype === 'application/vnd.oasis.opendocument.text' && names.has('content.xml')) return 'odt';
  return null;
}

/** Decodes the head as text (UTF-8, or UTF-16 with a BOM); null when it is binary. */
export function decodeTextHead(head: Uint8Array): string | null {
  if (head[0] === 0xff && head[1] === 0xfe) return new TextDecoder('utf-16le').decode(head.subarray(2));
  if (head[0] === 0xfe && head[1] === 0xff) return new TextDecoder('utf-16be').decode(head.subarray(2));
  let end = head.length;
  // a multi-byte character cut at the end of the head is not an error
  for (let k = 1; k <= 3 && end - k >= 0; k++) {
    const c = head[end - k]!;
    if ((c & 0xc0) === 0xc0) {
      end -= k;
      break;
    }
    if ((c & 0x80) === 0) break;
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, end));
  } catch {
    return null;
  }
  let control = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return null;
    if (c < 32 && c !== 9 && c !== 10 && c !== 13 && c !== 12) control++;
  }
  return control > text.length * 0.01 ? null : text;
}

function sniffText(head: Uint8Array): DocFormat | null {
  const text = decodeTextHead(head);
  if (text === null || text.trim() === '') return null;
  const t = text.replace(/^\uFEFF/, '');
  // Text-based formats that are programs or page descriptions, not prose: PostScript, EPS, PDF-like
  // headers without a body, RTF. Reading them as plain text would "convert" their source code.
  if (/^(%!|%PDF-|\{\\rtf)/.test(t)) return null;
  const start = t.trimStart().slice(0, 2000).toLowerCase();
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<!doctype html/.test(start) || /^(<\?xml[^>]*>\s*)?<(html|head|body)[\s>]/.test(start)) {
    return 'html';
  }
  if (isEml(t)) return 'eml';
  if (
    /^<(div|p|table|h[1-6]|section|article|ul|ol|span)[\s>]/.test(start) && /<\/(div|p|table|h[1-6]|section|article|ul|ol|span)>/.test(t)
  ) return 'html';
  if (isCsv(t)) return 'csv';
  if (isMarkdown(t)) return 'markdown';
  return 'text';
}

function isEml(t: string): boolean {
  const headerBlock = t.split(/\r?\n\r?\n/, 1)[0]!;
  const lines = headerBlock.split(/\r?\n/).filter((l) => !/^[ \t]/.test(l));
  if (lines.length < 2 || !lines.every((l) => /^[A-Za-z0-9-]+:/.test(l))) return false;
  const names = new Set(lines.map((l) => l.slice(0, l.indexOf(':')).toLowerCase()));
  const mailish =
    ['from', 'to', 'subject', 'date', 'message-id', 'received', 'mime-version', 'return-path'].filter((n) => names.has(n)).length;
  return mailish >= 2 && (names.has('from') || names.has('received') || names.has('message-id'));
}

/** CSV when the first records (read by a CSV parser, so quoted commas and newlines count right) have one width of two or more. */
function isCsv(t: string): boolean {
  let records: string[][];
  try {
    // The head may cut the last record: parse whole lines only, at most 50 records.
    const text = t.length >= 4096 ? t.slice(0, t.lastIndexOf('\n') + 1) : t;
    records = parseCsv(text, { relax_column_count: true, skip_empty_lines: true, to: 50 }) as string[][];
  } catch {
    return false;
  }
  if (records.length < 2) return false;
  const first = records[0]!.length;
  if (first < 2) return false;
  const line0 = t.trimStart().split(/\r?\n/, 1)[0]!;
  if (/^\s*[#>*-]|^\s*\d+\.\s/.test(line0) && !line0.includes('"')) return false;
  return records.filter((r) => r.length === first).length >= records.length * 0.9;
}

function isMarkdown(t: string): boolean {
  const lines = t.split(/\r?\n/).slice(0, 400);
  let score = 0;
  for (const l of lines) {
    if (/^#{1,6}\s+\S/.test(l)) score += 2;
    else if (/^\s*([-*+]|\d+\.)\s+\S/.test(l)) score += 0.5;
    else if (/^```|^~~~/.test(l)) score += 2;
    else if (/^\s*\|.*\|\s*$/.test(l) && /-{3}/.test(l)) score += 2;
    else if (/^>\s/.test(l)) score += 0.5;
    if (/\[[^\]]+\]\([^)]+\)|\*\*[^*]+\*\*|`[^`]+`/.test(l)) score += 1;
  }
  return score >= 2;
}

/** Reads the head of a file (and the whole file only when it is a ZIP) and detects its format. */
export async function detectFile(path: string): Promise<DocFormat | null> {
  const fh = await open(path, 'r');
  try {
    const head = new Uint8Array(65536);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    const h = head.subarray(0, bytesRead);
    let whole: Uint8Array | undefined;
    if (ascii(h, 0, 4) === 'PK\x03\x04') whole = new Uint8Array(await fh.readFile());
    return sniffFormat(h, () => whole ?? h);
  } finally {
    await fh.close();
  }
}

/** detectFile, or 415 unsupported_file_type. */
export async function requireFormat(path: string, allowed?: ReadonlySet<DocFormat>, what = 'this operation'): Promise<DocFormat> {
  const f = await detectFile(path);
  if (!f) {
    throw unsupportedFileType(
      'the file is not a format any document pipeline ingests (PDF, PNG, JPEG, WebP, TIFF, AVIF, GIF, BMP, DOCX, XLSX, PPTX, ODT, HTML, Markdown, plain text, CSV, EML)',
    );
  }
  if (allowed && !allowed.has(f)) {
    throw unsupportedFileType(`${f.toUpperCase()} input is not accepted by ${what} (accepted: ${[...allowed].join(', ')})`);
  }
  return f;
}
