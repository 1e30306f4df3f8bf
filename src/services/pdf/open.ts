/**
 * Every operation's entry: sniff the bytes, parse with pdf-lib, and decrypt through PDFium when the
 * file is encrypted, so all operations answer the same password_required / password_incorrect /
 * pdf_corrupt for the same input. The caller's bytes are never modified (PDFium works on a heap copy,
 * pdf-lib only reads).
 */
import { checkPages } from '../limits.ts';
import { PDFDict, PDFDocument, PDFName, PDFNumber } from '@cantoo/pdf-lib';
import { notAPdf, pdfCorrupt } from './reasons.ts';
import { loadPdfium, openDoc, SAVE_REMOVE_SECURITY, saveDoc } from './pdfium.ts';

export interface OpenOptions {
  password?: string;
}

export interface EncryptionInfo {
  /** e.g. AES-256, AES-128, RC4-128, RC4-40 */
  algorithm: string;
  /** security handler revision (R) */
  revision: number;
  /** raw /P permission bits */
  permissionBits: number;
  permissions: Permissions;
}

export interface Permissions {
  print: boolean;
  modify: boolean;
  copy: boolean;
  annotate: boolean;
  fillForms: boolean;
  extractForAccessibility: boolean;
  assemble: boolean;
  printHighQuality: boolean;
}

export interface OpenedPdf {
  doc: PDFDocument;
  /** the unencrypted bytes (the input itself when it was not encrypted) */
  plain: Uint8Array;
  encryption: EncryptionInfo | null;
}

/** True when the bytes carry a %PDF- header within the first KiB (where readers accept it). */
export function isPdf(bytes: Uint8Array): boolean {
  const head = bytes.subarray(0, 1024);
  for (let i = 0; i + 5 <= head.length; i++) {
    if (head[i] === 0x25 && head[i + 1] === 0x50 && head[i + 2] === 0x44 && head[i + 3] === 0x46 && head[i + 4] === 0x2d) return true;
  }
  return false;
}

export function assertPdf(bytes: Uint8Array): void {
  if (!isPdf(bytes)) throw notAPdf();
}

async function parse(bytes: Uint8Array): Promise<PDFDocument> {
  let doc: PDFDocument;
  try {
    doc = await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false, throwOnInvalidObject: false });
    doc.getPages(); // forces the page tree; a broken one throws here rather than later
  } catch (e) {
    throw pdfCorrupt((e as Error).message);
  }
  if (doc.getPageCount() === 0) throw pdfCorrupt('the document has no pages.');
  checkPages(doc.getPageCount());
  return doc;
}

/** Open a PDF for reading or editing; decrypts with `password` when the file is encrypted. */
export async function openPdf(bytes: Uint8Array, opts: OpenOptions = {}): Promise<OpenedPdf> {
  assertPdf(bytes);
  const first = await parse(bytes);
  if (!first.isEncrypted) return { doc: first, plain: bytes, encryption: null };
  const encryption = encryptionInfo(first);
  const plain = await decrypt(bytes, opts.password);
  return { doc: await parse(plain), plain, encryption };
}

/** Decrypt through PDFium (AES-256/128, RC4); throws the password reasons. */
export async function decrypt(bytes: Uint8Array, password?: string): Promise<Uint8Array> {
  const m = await loadPdfium();
  const d = openDoc(m, bytes, password);
  try {
    m.EPDF_RemoveEncryption(d.doc);
    return saveDoc(m, d.doc, SAVE_REMOVE_SECURITY);
  } finally {
    d.close();
  }
}

/** Read the /Encrypt dictionary (numbers are not encrypted, so the raw parse is enough). */
export function encryptionInfo(doc: PDFDocument): EncryptionInfo {
  const ref = doc.context.trailerInfo.Encrypt;
  const dict = ref ? doc.context.lookupMaybe(ref, PDFDict) : undefined;
  const num = (d: PDFDict | undefined, k: string) => {
    const v = d?.lookupMaybe(PDFName.of(k), PDFNumber);
    return v ? v.asNumber() : undefined;
  };
  const v = num(dict, 'V') ?? 0;
  const r = num(dict, 'R') ?? 0;
  let algorithm = 'RC4-40';
  if (v >= 5 || r >= 5) algorithm = 'AES-256';
  else if (v === 4) {
    const cf = dict?.lookupMaybe(PDFName.of('CF'), PDFDict);
    const stdCf = cf?.lookupMaybe(PDFName.of('StdCF'), PDFDict);
    const cfm = stdCf?.get(PDFName.of('CFM'))?.toString();
    algorithm = cfm === '/AESV2' ? 'AES-128' : 'RC4-128';
  } else if (v >= 2) algorithm = `RC4-${num(dict, 'Length') ?? 40}`;
  const p = (num(dict, 'P') ?? -1) | 0;
  const bit = (n: number) => (p & (1 << (n - 1))) !== 0;
  return {
    algorithm,
    revision: r,
    permissionBits: p,
    permissions: {
      print: bit(3),
      modify: bit(4),
      copy: bit(5),
      annotate: bit(6),
      fillForms: bit(9) || bit(6),
      extractForAccessibility: bit(10) || bit(5),
      assemble: bit(11) || bit(4),
      printHighQuality: r >= 3 ? bit(12) && bit(3) : bit(3),
    },
  };
}
