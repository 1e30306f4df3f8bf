/** Fixtures made on the fly (pdf-lib, qpdf, ghostscript, imagemagick) and independent judges (qpdf, poppler). */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { PDFDocument, PDFName, PDFString, rgb, StandardFonts } from '@cantoo/pdf-lib';

export const dir = mkdtempSync(join(tmpdir(), 'svc-pdf-test-'));
let seq = 0;
export const tmp = (ext: string) => join(dir, `f${++seq}.${ext}`);

/** Fail loudly when a judge tool is missing: the CI installs it (qpdf, poppler-utils, ghostscript, imagemagick). */
export function tool(cmd: string, args: string[], input?: Uint8Array): { stdout: string; status: number; stderr: string } {
  const r = spawnSync(cmd, args, { input, maxBuffer: 256 << 20 });
  if (r.error) throw new Error(`${cmd} is needed by this test and is not installed: ${r.error.message}`);
  return { stdout: r.stdout.toString('utf8'), status: r.status ?? -1, stderr: r.stderr.toString('utf8') };
}

export function writeTmp(bytes: Uint8Array, ext = 'pdf'): string {
  const p = tmp(ext);
  writeFileSync(p, bytes);
  return p;
}

/** qpdf --check must pass on every PDF we write (exit 0; 3 = warnings only, also accepted). */
export function assertQpdfCheck(bytes: Uint8Array): void {
  const r = tool('qpdf', ['--check', writeTmp(bytes)]);
  assert.ok(r.status === 0 || r.status === 3, `qpdf --check failed (${r.status}): ${r.stdout}${r.stderr}`);
}

export const pdftotext = (bytes: Uint8Array, extra: string[] = []) => tool('pdftotext', [...extra, writeTmp(bytes), '-']).stdout;

export function pdfinfo(bytes: Uint8Array, extra: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of tool('pdfinfo', [...extra, writeTmp(bytes)]).stdout.split('\n')) {
    const m = /^([^:]+):\s*(.*)$/.exec(line);
    if (m) out[m[1]!.trim()] = m[2]!.trim();
  }
  return out;
}

export const pageCount = (bytes: Uint8Array) => Number(pdfinfo(bytes)['Pages']);

/** A text PDF: each page says "Page N" plus the given lines. */
export async function makePdf(
  pages: number,
  opts: { lines?: (page: number) => string[]; size?: [number, number]; title?: string } = {},
): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 1; i <= pages; i++) {
    const page = doc.addPage(opts.size ?? [612, 792]);
    page.drawText(`Page ${i}`, { x: 72, y: page.getHeight() - 72, size: 18, font, color: rgb(0, 0, 0) });
    (opts.lines?.(i) ?? []).forEach((l, k) => page.drawText(l, { x: 72, y: page.getHeight() - 120 - 24 * k, size: 14, font }));
  }
  if (opts.title) doc.setTitle(opts.title);
  return doc.save();
}

/** Encrypt with qpdf: 256 = AES-256, 128 = AES-128 (--use-aes=y), 'rc4' = RC4-128, 40 = RC4-40. */
export function encrypt(bytes: Uint8Array, user: string, owner: string, kind: 256 | 128 | 'rc4' | 40, restrict: string[] = []): Uint8Array {
  const src = writeTmp(bytes);
  const dst = tmp('pdf');
  const bits = kind === 'rc4' ? '128' : String(kind);
  const args = [
    '--allow-weak-crypto',
    '--encrypt',
    user,
    owner,
    bits,
    ...(kind === 128 ? ['--use-aes=y'] : []),
    ...(kind === 'rc4' ? ['--use-aes=n'] : []),
    ...restrict,
    '--',
    src,
    dst,
  ];
  const r = tool('qpdf', args);
  assert.ok(r.status === 0 || r.status === 3, r.stderr);
  return readFileSync(dst);
}

/** A document that claims a signature: a /Sig field with a byte range (no real signature behind it). */
export async function signedStub(bytes: Uint8Array): Promise<Uint8Array> {
  const d = await PDFDocument.load(bytes);
  const sig = d.context.obj({
    Type: 'Sig',
    Filter: 'Adobe.PPKLite',
    SubFilter: 'adbe.pkcs7.detached',
    ByteRange: [0, 10, 20, 30],
    Contents: PDFString.of('00'),
  });
  const field = d.context.obj({ FT: 'Sig', T: PDFString.of('Signature1'), V: d.context.register(sig) });
  d.catalog.set(PDFName.of('AcroForm'), d.context.obj({ Fields: [d.context.register(field)] }));
  return d.save();
}

/** The document rewritten by ghostscript as PDF/A-2 (it carries the XMP pdfaid claim). */
export function pdfaByGhostscript(bytes: Uint8Array): Uint8Array {
  const src = writeTmp(bytes);
  const dst = tmp('pdf');
  tool('gs', [
    '-q',
    '-dPDFA=2',
    '-dBATCH',
    '-dNOPAUSE',
    '-dPDFACompatibilityPolicy=1',
    '-sColorConversionStrategy=RGB',
    '-sDEVICE=pdfwrite',
    `-sOutputFile=${dst}`,
    src,
  ]);
  return new Uint8Array(readFileSync(dst));
}

/** pdftotext breaks rotated words apart: compare with whitespace removed */
export const squash = (s: string) => s.replace(/\s+/g, '');

export function showEncryption(bytes: Uint8Array, password?: string): string {
  return tool('qpdf', [...(password ? [`--password=${password}`] : []), '--show-encryption', writeTmp(bytes)]).stdout;
}

/** A PNG made by ImageMagick. */
export function magick(args: string[], ext: string): Uint8Array {
  const out = tmp(ext);
  execFileSync('convert', [...args, out]);
  return readFileSync(out);
}

export async function rejects(p: Promise<unknown>, status: number, reason: string): Promise<void> {
  await assert.rejects(p, (e: any) => {
    assert.equal(e?.name, 'ServiceError', `expected ServiceError, got ${e?.stack ?? e}`);
    assert.equal(e.reason, reason, e.message);
    assert.equal(e.status, status);
    return true;
  });
}
