/**
 * The heavy operations a worker can run, by name. Registering one is one line: a name and a function of
 * (args, ctx) over plain values (bytes, options) — no closures over app state, since it runs in another
 * thread. Callers use `workers.run(name, args, {signal, progress})` (./index.ts); the types follow from
 * this table. Inputs are checked against the limits (ctx.limits) before any decoding.
 */
import type { DocFormat } from '../documents/detect.ts';
import { guardDocument, guardImage, guardPdf } from './guards.ts';
import type { OpContext } from './serve-operations.ts';
import { ortSessionOperations } from '../inference/ort-sessions.ts';

type PdfMod = typeof import('../pdf/index.ts');
type P<K extends keyof PdfMod> = PdfMod[K] extends (...a: infer A) => unknown ? A : never;
/**
 * A module loaded on first use and kept: a worker that never runs an operation does not load its engines,
 * and later tasks skip the loader (a dynamic `import()` goes through module resolution every time, which
 * under a loader hook costs about a millisecond: more than a small task's own work).
 */
const once = <T>(load: () => Promise<T>): () => Promise<T> => {
  let p: Promise<T> | undefined;
  return () => (p ??= load());
};
const pdf = once(() => import('../pdf/index.ts'));
const analyse = once(() => import('../documents/analyse.ts'));
const highlight = once(() => import('../documents/highlight.ts'));
const thumbnails = once(() => import('../documents/thumbnails.ts'));
const validate = once(() => import('../documents/validate.ts'));
const imageLoad = once(() => import('../images/load.ts'));
const ocr = once(() => import('../ocr/ocr.ts'));
const sign = once(() => import('../pdf/trust/pdf-sign.ts'));
const timestamp = once(() => import('../pdf/trust/pdf-timestamp.ts'));
const ltv = once(() => import('../pdf/trust/pdf-ltv.ts'));
const chunking = once(() => import('../retrieval/chunk-document.ts'));
const tokenizer = once(() => import('./tokenizer.ts'));
type NoCallbacks<T> = Omit<T, 'signal' | 'progress'>;
type AnalyseOpts = NoCallbacks<NonNullable<Parameters<typeof import('../documents/analyse.ts')['analyseBytes']>[2]>>;
type HighlightOpts = NoCallbacks<Parameters<typeof import('../documents/highlight.ts')['highlightDocument']>[2]>;
type ThumbOpts = NonNullable<Parameters<typeof import('../documents/thumbnails.ts')['documentThumbnails']>[2]>;
type ValidateMeta = Parameters<typeof import('../documents/validate.ts')['validateDocument']>[1];
type OcrOpts = NoCallbacks<NonNullable<Parameters<typeof import('../ocr/ocr.ts')['ocrDocument']>[2]>>;
type ImgMod = typeof import('../images/index.ts');
type I<K extends keyof ImgMod> = ImgMod[K] extends (...a: infer A) => unknown ? A : never;
/** An image function's arguments with its options' `signal` taken from the task instead. */
type INoSignal<K extends keyof ImgMod> = I<K> extends [infer B, infer O] ? [B, NoCallbacks<O>] : never;
const img = once(() => import('../images/index.ts'));
const text = once(() => import('../text/fast-tasks.ts'));
const cb = (ctx: OpContext) => ({ signal: ctx.signal, progress: (d: number, t: number) => ctx.progress(d, t) });

export const operations = {
  /** Only the limit checks of a PDF, for work that must stay on the loop (it needs the network, say). */
  'pdf.guard': async ([b]: [Uint8Array], c: OpContext) => void (await guardPdf(b, c)),
  'text.tokenize': async ([dir, texts, addSpecial]: [string, string[], boolean]) => (await tokenizer()).tokenize(dir, texts, addSpecial),
  'pdf.info': async ([b, o]: P<'pdfInfo'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfInfo(b, o)),
  'pdf.layout': async ([b, o]: P<'pdfLayout'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfLayout(b, o)),
  'pdf.search': async ([b, o]: P<'pdfSearch'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfSearch(b, o)),
  'pdf.merge': async ([ins, o]: P<'pdfMerge'>, c: OpContext) => {
    for (const i of ins) await guardPdf(i.bytes, c);
    return (await pdf()).pdfMerge(ins, o);
  },
  'pdf.split': async ([b, o]: P<'pdfSplit'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfSplit(b, o)),
  'pdf.edit': async ([b, ops, o]: P<'pdfEdit'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfEdit(b, ops, o)),
  'pdf.unlock': async ([b, o]: P<'pdfUnlock'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfUnlock(b, o)),
  'pdf.redact': async ([b, o]: P<'pdfRedact'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfRedact(b, o)),
  'pdf.render': async ([b, o]: P<'pdfToImages'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfToImages(b, o)),
  'pdf.watermark': async ([b, o]: P<'pdfWatermark'>, c: OpContext) => {
    await guardPdf(b, c);
    if (o.logo) guardImage(o.logo, c);
    return (await pdf()).pdfWatermark(b, o);
  },
  'pdf.remove-watermark': async (
    [b, o]: P<'pdfRemoveWatermark'>,
    c: OpContext,
  ) => (await guardPdf(b, c), (await pdf()).pdfRemoveWatermark(b, o)),
  'pdf.from-images': async ([ins, o]: P<'imageToPdf'>, c: OpContext) => {
    for (const i of ins) guardImage(i.bytes, c);
    return (await pdf()).imageToPdf(ins, o);
  },
  'pdf.to-pdfa': async ([b, o]: P<'pdfToPdfa'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfToPdfa(b, o)),
  'pdf.pdfa-check': async ([b, o]: P<'pdfaCheck'>, c: OpContext) => (await guardPdf(b, c), (await pdf()).pdfaCheck(b, o)),
  'pdf.ocr': async (
    [b, o]: [Uint8Array, NoCallbacks<NonNullable<P<'pdfOcr'>[1]>>],
    c: OpContext,
  ) => (await guardPdf(b, c), (await pdf()).pdfOcr(b, { ...o, ...cb(c) })),
  'document.analyse': async (
    [b, f, o]: [Uint8Array, DocFormat, AnalyseOpts?],
    c: OpContext,
  ) => (await guardDocument(b, f, c), (await analyse()).analyseBytes(b, f, { ...o, ...cb(c) })),
  'document.highlight': async (
    [b, f, o]: [Uint8Array, DocFormat, HighlightOpts],
    c: OpContext,
  ) => (await guardDocument(b, f, c),
    (await highlight()).highlightDocument(
      b,
      f,
      { ...o, ...cb(c) } as Parameters<typeof import('../documents/highlight.ts')['highlightDocument']>[2],
    )),
  'document.thumbnails': async (
    [b, f, o]: [Uint8Array, DocFormat, ThumbOpts?],
    c: OpContext,
  ) => (await guardDocument(b, f, c), (await thumbnails()).documentThumbnails(b, f, o)),
  'document.validate': async ([b, meta]: [Uint8Array, ValidateMeta?], _c: OpContext) => (await validate()).validateDocument(b, meta),
  /** One image page as RGBA pixels (a chat image for a vision model); the pixel limit is checked on its header first. */
  'image.decode-rgba': async ([b]: [Uint8Array], c: OpContext) => {
    guardImage(b, c);
    const { img } = await (await imageLoad()).loadPage(b, { maxPixels: c.limits.maxImagePixels });
    return { data: img.data, width: img.width, height: img.height };
  },
  'ocr.recognize': async (
    [b, kind, o]: [Uint8Array, 'pdf' | 'image', OcrOpts?],
    c: OpContext,
  ) => (await (kind === 'pdf' ? guardPdf(b, c) : guardImage(b, c)), (await ocr()).ocrDocument(b, kind, { ...o, ...cb(c) })),
  // Images: each service checks the declared pixels (its maxPixels) before decoding. Background removal
  // stays on the loop: its ONNX session runs on ONNX Runtime's own threads.
  'image.convert': async ([b, o]: I<'imageConvert'>) => (await img()).imageConvert(b, o),
  'image.watermark': async ([b, w, o]: I<'imageWatermark'>) => (await img()).imageWatermark(b, w, o),
  'image.logo': async ([b, max]: I<'decodeForLogo'>) => (await img()).decodeForLogo(b, max),
  'image.analysis': async ([b, o]: INoSignal<'imageAnalysis'>, c: OpContext) => (await img()).imageAnalysis(b, { ...o, signal: c.signal }),
  'image.palette': async ([b, o]: I<'imageColorPalette'>) => (await img()).imageColorPalette(b, o),
  'image.enhance': async ([b, o]: I<'imageEnhance'>) => (await img()).imageEnhance(b, o),
  'image.deskew': async ([b, o]: I<'imageDeskew'>) => (await img()).imageDeskew(b, o),
  'image.normalization': async ([b, o]: I<'imageNormalization'>) => (await img()).imageNormalization(b, o),
  'image.redact': async ([b, o]: INoSignal<'imageRedact'>, c: OpContext) => (await img()).imageRedact(b, { ...o, signal: c.signal }),
  // PDF trust: the PDF work of sign, timestamp and LTV (the TSA, OCSP and CRL requests stay with the caller).
  'pdf.sign-prepare': async (
    [b, o]: Parameters<typeof import('../pdf/trust/pdf-sign.ts')['prepareSignature']>,
    c: OpContext,
  ) => (await guardPdf(b, c), (await sign()).prepareSignature(b, o)),
  'pdf.timestamp-prepare': async (
    [b, o]: Parameters<typeof import('../pdf/trust/pdf-timestamp.ts')['prepareTimestamp']>,
    c: OpContext,
  ) => (await guardPdf(b, c), (await timestamp()).prepareTimestamp(b, o)),
  'pdf.ltv-read': async (
    [b]: [Uint8Array],
    c: OpContext,
  ) => (await guardPdf(b, c), (await ltv()).readLtvInputs(b)),
  'pdf.ltv-write': async (a: Parameters<typeof import('../pdf/trust/pdf-ltv.ts')['writeLtv']>) => (await ltv()).writeLtv(...a),
  // Text tasks without a model, on large inputs (../text/fast-tasks.ts).
  'text.language': async ([t]: [string]) => (await text()).languageOf(t),
  'text.pii': async ([t, o]: [string, import('../text/fast-tasks.ts').PiiOptions]) => (await text()).piiOf(t, o),
  'text.keywords': async ([t, o]: [string, { limit: number; maxWords: number }]) => (await text()).keywordsOf(t, o),
  'text.entities': async ([t, o]: [string, { types?: string[] }]) => (await text()).entitiesOf(t, o),
  /** A file's bytes to retrieval chunks (document analysis with OCR, then the token splitter). */
  'retrieval.chunk': async (
    [b, f, meta, o]: [Uint8Array, DocFormat, Record<string, unknown>, import('../retrieval/chunk-document.ts').ChunkingOptions?],
    c: OpContext,
  ) => (await guardDocument(b, f, c), (await chunking()).chunkDocument(b, f, meta, o, c.signal)),
  /** ONNX Runtime sessions, in the one thread that hosts them (../inference/ort-thread.ts), not in the pool. */
  ...ortSessionOperations,
};

export type Operations = typeof operations;
export type OpName = keyof Operations;
export type OpArgs<K extends OpName> = Parameters<Operations[K]>[0];
export type OpResult<K extends OpName> = Awaited<ReturnType<Operations[K]>>;
