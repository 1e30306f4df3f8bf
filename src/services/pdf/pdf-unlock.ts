/**
 * pdfUnlock: remove encryption (AES-256, AES-128, RC4) with the user or owner password; a file with
 * only owner restrictions (empty user password) opens without one, and its restrictions go too.
 * An unencrypted input comes back unchanged.
 */
import { assertPdf } from './open.ts';
import { loadPdfium, openDoc, SAVE_REMOVE_SECURITY, saveDoc } from './pdfium.ts';

export interface UnlockResult {
  pdf: Uint8Array;
  /** false when the input was not encrypted (pdf is then the input bytes) */
  wasEncrypted: boolean;
}

export async function pdfUnlock(bytes: Uint8Array, opts: { password?: string } = {}): Promise<UnlockResult> {
  assertPdf(bytes);
  const m = await loadPdfium();
  const d = openDoc(m, bytes, opts.password);
  try {
    if (!m.EPDF_IsEncrypted(d.doc)) return { pdf: bytes, wasEncrypted: false };
    m.EPDF_RemoveEncryption(d.doc);
    return { pdf: saveDoc(m, d.doc, SAVE_REMOVE_SECURITY), wasEncrypted: true };
  } finally {
    d.close();
  }
}
