/**
 * PDFium (WASM) loaded lazily, once, plus the few memory helpers every caller needs.
 * All PDFium work is synchronous between open and close, so one module instance is safe to share:
 * JavaScript never interleaves two documents' calls mid-operation.
 */
import { checkPages, limits } from '../limits.ts';
import { init, type WrappedPdfiumModule } from '@embedpdf/pdfium';
import { readFile } from 'node:fs/promises';
import { packageFile } from '../../runtime/assets.ts';
import { ServiceError } from '../errors.ts';
import { passwordIncorrect, passwordRequired, pdfCorrupt } from './reasons.ts';

export type Pdfium = WrappedPdfiumModule;

/** The emscripten heap views (re-read on every use: they are replaced when the heap grows). */
type Heaps = { HEAPU8: Uint8Array; HEAPF32: Float32Array; HEAPF64: Float64Array; HEAP32: Int32Array };
export const heap = (m: Pdfium): Heaps => m.pdfium as unknown as Heaps;

let loading: Promise<Pdfium> | undefined;

/** The shared PDFium instance; the 4 MB wasm is read and compiled on first use only. */
export function loadPdfium(): Promise<Pdfium> {
  loading ??= (async () => {
    const wasmPath = packageFile('@embedpdf/pdfium/pdfium.wasm');
    const wasmBinary = await readFile(wasmPath);
    const m = await init({
      wasmBinary: wasmBinary.buffer.slice(wasmBinary.byteOffset, wasmBinary.byteOffset + wasmBinary.byteLength) as ArrayBuffer,
    });
    m.PDFiumExt_Init();
    return m;
  })().catch((e) => {
    loading = undefined; // let a later call retry instead of caching the failure
    throw e;
  });
  return loading;
}

// FPDF_GetLastError codes (fpdfview.h)
const FPDF_ERR_FILE = 2;
const FPDF_ERR_FORMAT = 3;
const FPDF_ERR_PASSWORD = 4;
const FPDF_ERR_SECURITY = 5;

export interface PdfiumDoc {
  m: Pdfium;
  doc: number;
  close(): void;
}

/**
 * Open bytes in PDFium. The bytes are copied into the wasm heap and must stay there until close():
 * FPDF_LoadMemDocument does not copy them.
 */
export function openDoc(m: Pdfium, bytes: Uint8Array, password?: string): PdfiumDoc {
  const ptr = m.pdfium.wasmExports.malloc(bytes.byteLength);
  heap(m).HEAPU8.set(bytes, ptr);
  const doc = m.FPDF_LoadMemDocument64(ptr, bytes.byteLength, password ?? '');
  if (!doc) {
    const err = m.FPDF_GetLastError();
    m.pdfium.wasmExports.free(ptr);
    if (err === FPDF_ERR_PASSWORD) throw password ? passwordIncorrect() : passwordRequired();
    if (err === FPDF_ERR_SECURITY) {
      throw new ServiceError(
        422,
        'unsupported_encryption',
        'The PDF uses a security handler this service cannot open (for example certificate-based encryption).',
      );
    }
    if (err === FPDF_ERR_FORMAT || err === FPDF_ERR_FILE) throw pdfCorrupt('PDFium could not parse the file structure.');
    throw pdfCorrupt(`PDFium could not open the file (error ${err}).`);
  }
  const pages = m.FPDF_GetPageCount(doc);
  if (pages > limits().maxPages) {
    m.FPDF_CloseDocument(doc);
    m.pdfium.wasmExports.free(ptr);
    checkPages(pages);
  }
  let open = true;
  return {
    m,
    doc,
    close() {
      if (!open) return;
      open = false;
      m.FPDF_CloseDocument(doc);
      m.pdfium.wasmExports.free(ptr);
    },
  };
}

// FPDF_SaveAsCopy flags
export const SAVE_FULL = 2; // FPDF_NO_INCREMENTAL
export const SAVE_REMOVE_SECURITY = 3; // FPDF_REMOVE_SECURITY

/** Serialise a document to new bytes. */
export function saveDoc(m: Pdfium, doc: number, flags = SAVE_FULL): Uint8Array {
  const writer = m.PDFiumExt_OpenFileWriter();
  try {
    if (!m.FPDF_SaveAsCopy(doc, writer, flags)) throw new Error('PDFium could not save the document');
    const len = m.PDFiumExt_GetFileWriterSize(writer);
    const p = m.pdfium.wasmExports.malloc(len);
    try {
      m.PDFiumExt_GetFileWriterData(writer, p, len);
      return heap(m).HEAPU8.slice(p, p + len);
    } finally {
      m.pdfium.wasmExports.free(p);
    }
  } finally {
    m.PDFiumExt_CloseFileWriter(writer);
  }
}

/** Run fn with `n` scratch slots of 8 bytes each (enough for doubles), freed afterwards. */
export function withScratch<T>(m: Pdfium, n: number, fn: (slot: (i: number) => number) => T): T {
  const base = m.pdfium.wasmExports.malloc(8 * n);
  try {
    return fn((i) => base + 8 * i);
  } finally {
    m.pdfium.wasmExports.free(base);
  }
}

export const getF32 = (m: Pdfium, p: number) => heap(m).HEAPF32[p >> 2]!;
export const getF64 = (m: Pdfium, p: number) => heap(m).HEAPF64[p >> 3]!;
export const setF32 = (m: Pdfium, p: number, v: number) => {
  heap(m).HEAPF32[p >> 2] = v;
};

/** FPDFPageObj_GetType of an image object. */
export const OBJ_IMAGE = 3;
