/** pdfInfo: what a document is, read without changing it. */
import { type PDFDocument, PDFName } from '@cantoo/pdf-lib';
import { type EncryptionInfo, openPdf } from './open.ts';
import { countSignatures, type FontInfo, listFonts, type PdfaClaim, pdfaClaim } from './pdf-structure.ts';
import { loadPdfium, OBJ_IMAGE, openDoc } from './pdfium.ts';

export interface PageInfo {
  /** 1-based */
  page: number;
  /** CropBox size in points, before rotation (as pdfinfo prints it) */
  width: number;
  height: number;
  /** /Rotate in degrees: 0, 90, 180, 270 */
  rotation: number;
  /** text: has a text layer; scan: images and no text; empty: neither; vector: drawings only */
  content: 'text' | 'scan' | 'empty' | 'vector';
  characters: number;
  images: number;
}

export interface PdfInfo {
  fileSize: number;
  pdfVersion: string;
  pageCount: number;
  pages: PageInfo[];
  metadata: {
    title?: string;
    author?: string;
    subject?: string;
    keywords?: string;
    creator?: string;
    producer?: string;
    creationDate?: string;
    modificationDate?: string;
  };
  encrypted: boolean;
  /** present when encrypted: algorithm and the permissions the owner granted */
  encryption: EncryptionInfo | null;
  signatures: { present: boolean; count: number };
  pdfa: PdfaClaim;
  tagged: boolean;
  fonts: FontInfo[];
}

export async function pdfInfo(bytes: Uint8Array, opts: { password?: string } = {}): Promise<PdfInfo> {
  const { doc, plain, encryption } = await openPdf(bytes, opts);
  const content = await pageContents(plain);
  const pages = doc.getPages().map((p, i): PageInfo => {
    const box = p.getCropBox();
    return { page: i + 1, width: r2(box.width), height: r2(box.height), rotation: norm(p.getRotation().angle), ...content[i]! };
  });
  const sigs = countSignatures(doc);
  return {
    fileSize: bytes.byteLength,
    pdfVersion: headerVersion(bytes),
    pageCount: pages.length,
    pages,
    metadata: metadata(doc),
    encrypted: encryption !== null,
    encryption,
    signatures: { present: sigs > 0, count: sigs },
    pdfa: pdfaClaim(doc),
    tagged: doc.catalog.get(PDFName.of('StructTreeRoot')) !== undefined,
    fonts: listFonts(doc),
  };
}

/** Per page: how many characters PDFium extracts and how many image objects it draws. */
async function pageContents(plain: Uint8Array): Promise<Pick<PageInfo, 'content' | 'characters' | 'images'>[]> {
  const m = await loadPdfium();
  const d = openDoc(m, plain);
  try {
    const n = m.FPDF_GetPageCount(d.doc);
    const out: Pick<PageInfo, 'content' | 'characters' | 'images'>[] = [];
    for (let i = 0; i < n; i++) {
      const page = m.FPDF_LoadPage(d.doc, i);
      const tp = m.FPDFText_LoadPage(page);
      let characters = 0;
      const total = m.FPDFText_CountChars(tp);
      for (let c = 0; c < total; c++) if (!m.FPDFText_IsGenerated(tp, c) && m.FPDFText_GetUnicode(tp, c) > 32) characters++;
      m.FPDFText_ClosePage(tp);
      let images = 0;
      const objs = m.FPDFPage_CountObjects(page);
      for (let o = 0; o < objs; o++) if (m.FPDFPageObj_GetType(m.FPDFPage_GetObject(page, o)) === OBJ_IMAGE) images++;
      m.FPDF_ClosePage(page);
      const content = characters > 0 ? 'text' : images > 0 ? 'scan' : objs > 0 ? 'vector' : 'empty';
      out.push({ content, characters, images });
    }
    return out;
  } finally {
    d.close();
  }
}

function metadata(doc: PDFDocument): PdfInfo['metadata'] {
  const safe = <T>(f: () => T): T | undefined => {
    try {
      return f() ?? undefined;
    } catch {
      return undefined; // a malformed date string is not worth failing info for
    }
  };
  return {
    title: safe(() => doc.getTitle()),
    author: safe(() => doc.getAuthor()),
    subject: safe(() => doc.getSubject()),
    keywords: safe(() => doc.getKeywords()),
    creator: safe(() => doc.getCreator()),
    producer: safe(() => doc.getProducer()),
    creationDate: safe(() => doc.getCreationDate()?.toISOString()),
    modificationDate: safe(() => doc.getModificationDate()?.toISOString()),
  };
}

/** The version in the %PDF-x.y header. */
function headerVersion(bytes: Uint8Array): string {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 1024));
  return /%PDF-(\d\.\d)/.exec(head)?.[1] ?? 'unknown';
}

const r2 = (n: number) => Math.round(n * 100) / 100;
const norm = (deg: number) => ((deg % 360) + 360) % 360;
