/**
 * Validation report of a document: what it is by content, whether that matches its name / declared type,
 * whether it opens, is encrypted or damaged, its page count and whether it has text. Never throws for a
 * property of the document: every finding is a field or an entry of `issues`.
 */
import { unzipSync } from 'fflate';
import { isServiceError } from '../errors.ts';
import { pdfInfo } from '../pdf/pdf-info.ts';
import { decodeBmp, sharpLib } from '../ocr/raster.ts';
import { type DocFormat, EXTENSIONS, isImage, MIME, sniffFormat } from './detect.ts';
import { toMarkdown } from './analyse.ts';

export interface ValidationReport {
  valid: boolean;
  filename: string | null;
  bytes: number;
  detected_format: DocFormat | null;
  mime_type: string | null;
  /** the format the file name's extension (or the declared content type) claims, when it names one */
  claimed_format: DocFormat | null;
  matches_claim: boolean | null;
  readable: boolean;
  encrypted: boolean;
  damaged: boolean;
  page_count: number | null;
  has_text: boolean | null;
  /** PDFs: pages whose content is a scan (image only) */
  scanned_pages?: number[];
  width?: number;
  height?: number;
  issues: { code: string; message: string }[];
}

const CFB = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

export async function validateDocument(
  bytes: Uint8Array,
  meta: { filename?: string; contentType?: string; password?: string } = {},
): Promise<ValidationReport> {
  const issues: ValidationReport['issues'] = [];
  const ext = /\.([A-Za-z0-9]+)$/.exec(meta.filename ?? '')?.[1]?.toLowerCase();
  const byType = Object.entries(MIME).find(([, m]) => m === (meta.contentType ?? '').split(';')[0]!.trim().toLowerCase())?.[0] as
    | DocFormat
    | undefined;
  const claimed = (ext ? EXTENSIONS[ext] : undefined) ?? byType ?? null;
  let detected: DocFormat | null = null;
  try {
    detected = sniffFormat(bytes.subarray(0, 65536), () => bytes);
  } catch {
    detected = null;
  }
  const r: ValidationReport = {
    valid: false,
    filename: meta.filename ?? null,
    bytes: bytes.byteLength,
    detected_format: detected,
    mime_type: detected ? MIME[detected] : null,
    claimed_format: claimed,
    matches_claim: claimed ? claimed === detected : null,
    readable: false,
    encrypted: false,
    damaged: false,
    page_count: null,
    has_text: null,
    issues,
  };
  if (bytes.byteLength === 0) {
    issues.push({ code: 'empty', message: 'the file is empty' });
    return r;
  }
  if (!detected) {
    if (CFB.every((b, i) => bytes[i] === b)) {
      issues.push({
        code: 'unsupported_format',
        message:
          'an OLE compound file: a legacy Office document (.doc/.xls/.ppt) or a password-protected Office file; not a supported format',
      });
    } else if (bytes[0] === 0x50 && bytes[1] === 0x4b) {
      issues.push({ code: 'unsupported_format', message: 'a ZIP archive that is not an Office Open XML or OpenDocument text file' });
    } else issues.push({ code: 'unsupported_format', message: 'the content is not a supported document format' });
    return r;
  }
  if (claimed && claimed !== detected) {
    issues.push({
      code: 'format_mismatch',
      message: `the name or declared type says ${claimed.toUpperCase()} but the content is ${detected.toUpperCase()}`,
    });
  }
  try {
    if (detected === 'pdf') await checkPdf(bytes, r, meta.password);
    else if (isImage(detected)) await checkImage(bytes, detected, r);
    else await checkOther(bytes, detected, r);
  } catch (e) {
    r.readable = false;
    r.damaged = true;
    issues.push({ code: 'unreadable', message: (e as Error).message });
  }
  r.valid = r.readable && !r.damaged && r.matches_claim !== false;
  return r;
}

async function checkPdf(bytes: Uint8Array, r: ValidationReport, password?: string): Promise<void> {
  const tail = new TextDecoder('latin1').decode(bytes.subarray(Math.max(0, bytes.length - 2048)));
  if (!tail.includes('%%EOF')) {
    r.damaged = true;
    r.issues.push({ code: 'truncated', message: 'no %%EOF marker at the end: the file looks truncated' });
  }
  try {
    const info = await pdfInfo(bytes, { password });
    r.readable = true;
    r.encrypted = info.encrypted;
    r.page_count = info.pageCount;
    r.has_text = info.pages.some((p) => p.content === 'text');
    r.scanned_pages = info.pages.filter((p) => p.content === 'scan').map((p) => p.page);
    if (info.encrypted) {
      r.issues.push({
        code: 'encrypted',
        message: `encrypted (${info.encryption?.algorithm ?? 'unknown'}); opened ${
          password ? 'with the password given' : 'without a password (owner restrictions only)'
        }`,
      });
    }
    if (!r.has_text) r.issues.push({ code: 'no_text_layer', message: 'no page has a text layer: OCR is needed to read it' });
  } catch (e) {
    if (!isServiceError(e)) throw e;
    if (e.reason === 'password_required' || e.reason === 'password_incorrect' || e.reason === 'unsupported_encryption') {
      r.encrypted = true;
      r.issues.push({ code: e.reason, message: e.message });
    } else {
      r.damaged = true;
      r.issues.push({ code: e.reason, message: e.message });
    }
  }
}

async function checkImage(bytes: Uint8Array, f: DocFormat, r: ValidationReport): Promise<void> {
  if (f === 'bmp') {
    const img = decodeBmp(bytes);
    Object.assign(r, { readable: true, page_count: 1, width: img.width, height: img.height, has_text: null });
    return;
  }
  const sharp = await sharpLib();
  if (!sharp) {
    r.issues.push({ code: 'not_checked', message: 'image decoding is unavailable in this runtime' });
    r.readable = true;
    return;
  }
  try {
    const m = await sharp(bytes).metadata();
    await sharp(bytes, { failOn: 'truncated' }).raw().toBuffer(); // decodes every pixel: truncation shows here
    Object.assign(r, { readable: true, page_count: m.pages ?? 1, width: m.width, height: m.height, has_text: null });
  } catch (e) {
    r.damaged = true;
    r.readable = false;
    r.issues.push({ code: 'image_corrupt', message: `the image does not decode: ${(e as Error).message}` });
  }
}

async function checkOther(bytes: Uint8Array, f: DocFormat, r: ValidationReport): Promise<void> {
  if (f === 'docx' || f === 'xlsx' || f === 'pptx' || f === 'odt') {
    try {
      unzipSync(bytes);
    } catch (e) {
      r.damaged = true;
      r.issues.push({ code: 'zip_corrupt', message: `a part of the archive does not inflate: ${(e as Error).message}` });
      return;
    }
  }
  const md = await toMarkdown(bytes, f);
  r.readable = true;
  r.has_text = md.replace(/[#|*\-\s]/g, '').length > 0;
  if (f === 'pptx') r.page_count = (md.match(/^## Slide \d+/gm) ?? []).length;
  if (f === 'xlsx') r.page_count = (md.match(/^## /gm) ?? []).length;
  if (!r.has_text) r.issues.push({ code: 'no_text', message: 'the document has no text' });
}
