/**
 * Document benchmark: pages per second of document-to-Markdown (text PDFs and scans) and OCR against the
 * `tesseract` CLI on the same images, in the same run.
 * Run: node --import tsx scripts/bench/documents.ts   (writes the "Documents and OCR" section of BENCHMARKS.md)
 * Needs tesseract-ocr, poppler-utils, imagemagick and ghostscript on PATH.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument } from '@cantoo/pdf-lib';
import { analyseBytes } from '../../src/services/documents/analyse.ts';
import { ocrGray, pickEngine, releaseOcrEngines } from '../../src/services/ocr/ocr.ts';
import { decodeGrayFrames } from '../../src/services/ocr/raster.ts';
import { scannedPdf, twoColumnGhostscript, twoColumnPdfLib } from '../../test/routes/documents/make-docs.ts';
import { writeSection } from './write-benchmarks.mjs';
import { medianTime } from './median-time.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-docs-'));
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

const median = (fn: () => unknown | Promise<unknown>, runs = RUNS) => medianTime(fn, runs);

/** n copies of the two-column first page (headings, list, table, header/footer) in one PDF. */
async function repeated(src: Uint8Array, n: number): Promise<Uint8Array> {
  const one = await PDFDocument.load(src);
  const doc = await PDFDocument.create();
  for (let i = 0; i < n; i++) {
    const [p] = await doc.copyPages(one, [0]);
    doc.addPage(p!);
  }
  return doc.save();
}

const rows: string[] = [];
const row = (...c: (string | number)[]) => rows.push(`| ${c.join(' | ')} |`);

// ---------------------------------------------------------------- text PDFs
const PAGES = 50;
const textPdfs = { 'pdf-lib': await repeated(await twoColumnPdfLib(1), PAGES), Ghostscript: await repeated(await twoColumnGhostscript(dir, 1), PAGES) };
await analyseBytes(textPdfs['pdf-lib'], 'pdf'); // warm PDFium
const textRows: string[] = [];
for (const [name, bytes] of Object.entries(textPdfs)) {
  const ms = await median(() => analyseBytes(bytes, 'pdf', { ocrScans: true }));
  const pps = (PAGES * 1000) / ms;
  textRows.push(`| text PDF, two columns + table (${name}), ${PAGES} pages | ${ms.toFixed(0)} ms | **${pps.toFixed(1)} pages/s** | goal > 20 pages/s: ${pps > 20 ? 'met' : 'missed'} |`);
}

// ---------------------------------------------------------------- scans and OCR vs the CLI
const srcPdf = join(dir, 'src.pdf');
writeFileSync(srcPdf, await twoColumnPdfLib(2));
// upright page images at 300 dpi (what the CLI reads as is): two pages, rendered by poppler
execFileSync('pdftoppm', ['-r', '300', '-gray', '-png', srcPdf, join(dir, 'page')]);
const images = ['page-1.png', 'page-2.png'].map((n) => join(dir, n));
const SCANS = 3;
const scan = await scannedPdf(dir, srcPdf);
const scanPdf = await repeated(scan.pdf, SCANS);

const grays = await Promise.all(images.map(async (p) => (await decodeGrayFrames(new Uint8Array(readFileSync(p))))[0]!));
const cli = await median(() => { for (const p of images) execFileSync('tesseract', [p, '-', '--psm', '3'], { stdio: 'ignore' }); });
const ocrRows: string[] = [];
for (const name of ['tesseract', 'paddle'] as const) {
  const engine = pickEngine(name);
  const cold = performance.now();
  await ocrGray(grays[0]!, 1, engine);
  const coldMs = performance.now() - cold;
  const seq = await median(async () => { for (const g of grays) await ocrGray(g, 1, engine); });
  const par = await median(() => Promise.all(grays.map((g) => ocrGray(g, 1, engine))));
  ocrRows.push(`| OCR ${name}, ${images.length} pages at 300 dpi, one after the other | ${seq.toFixed(0)} ms | ${(seq / cli).toFixed(2)}× the CLI | first call with engine load: ${coldMs.toFixed(0)} ms |`);
  ocrRows.push(`| OCR ${name}, the same pages submitted together (worker pool) | ${par.toFixed(0)} ms | ${(par / cli).toFixed(2)}× the CLI | ${name === 'tesseract' ? `goal ≤ 1.5×: ${par / cli <= 1.5 ? 'met' : 'missed'}` : ''} |`);
  const md = await median(() => analyseBytes(scanPdf, 'pdf', { ocrScans: true, engine: name }), 1);
  ocrRows.push(`| document-to-Markdown of scans (${name}; rotated 90°, skewed 3°, 200 dpi), ${SCANS} pages | ${md.toFixed(0)} ms | **${((SCANS * 1000) / md).toFixed(2)} pages/s** | |`);
}
ocrRows.unshift(`| tesseract CLI ${execFileSync('tesseract', ['--version']).toString().split('\n')[0]!.replace('tesseract ', '')}, ${images.length} pages at 300 dpi (peer) | ${cli.toFixed(0)} ms | 1.00× | ${(images.length * 1000 / cli).toFixed(2)} pages/s |`);
await releaseOcrEngines();
rmSync(dir, { recursive: true, force: true });

row('case', 'time (median)', 'rate / ratio', 'note');
const body = [
  `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; median of ${RUNS} runs (scan Markdown: 1 run). Run: \`node --import tsx scripts/bench/documents.ts\`.`,
  '',
  rows[0]!, '| --- | --- | --- | --- |', ...textRows, ...ocrRows,
  '',
  'Text PDFs go through `pdfLayout` (PDFium) and the layout analysis; scans are rendered at their image resolution, turned upright, deskewed and OCR\'d. The CLI reads the same upright 300-dpi PNGs with `--psm 3` (it does no deskew; our times include orientation and deskew). tesseract.js runs the `eng` LSTM model of `@tesseract.js-data/eng` (4.0.0_best_int) in WASM; the CLI runs Debian\'s native build with its own `eng` data.',
].join('\n');
console.log(body);
writeSection('Documents and OCR', body);
