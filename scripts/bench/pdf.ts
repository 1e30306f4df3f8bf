/**
 * PDF toolkit benchmark against qpdf / pdftoppm on the same files, in the same run.
 * Run: node --import tsx scripts/bench/pdf.ts   (writes the "PDF toolkit" section of BENCHMARKS.md and bench-out/pdf.md)
 * Needs qpdf and poppler-utils on PATH.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { pdfMerge } from '../../src/services/pdf/pdf-merge.ts';
import { pdfSplit } from '../../src/services/pdf/pdf-split.ts';
import { pdfToImages, renderPage } from '../../src/services/pdf/pdf-to-images.ts';
import { loadPdfium, openDoc } from '../../src/services/pdf/pdfium.ts';
import { pdfRedact } from '../../src/services/pdf/pdf-redact.ts';
import { writeSection } from './write-benchmarks.mjs';
import { medianTime } from './median-time.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-pdf-'));
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

async function makeDoc(pages: number, tag: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 1; p <= pages; p++) {
    const page = doc.addPage([612, 792]);
    for (let l = 0; l < 40; l++)
      page.drawText(`Doc ${tag} page ${p} line ${l}: account 4711-${String(1000 + l)} lorem ipsum dolor sit amet`, { x: 50, y: 750 - l * 17, size: 10, font });
  }
  return doc.save();
}

const time = (fn: () => unknown | Promise<unknown>) => medianTime(fn, RUNS);
const sh = (cmd: string, args: string[]) => () => execFileSync(cmd, args, { stdio: 'ignore' });

const files: { path: string; bytes: Uint8Array }[] = [];
for (let i = 0; i < 20; i++) {
  const bytes = await makeDoc(50, i);
  const path = join(dir, `in-${i}.pdf`);
  writeFileSync(path, bytes);
  files.push({ path, bytes });
}
const one = files[0]!;
mkdirSync(join(dir, 'split'), { recursive: true });
mkdirSync(join(dir, 'img'), { recursive: true });

const rows: [string, string, number, number][] = [];
rows.push(['merge 20 × 50 pages', 'qpdf --empty --pages', await time(() => pdfMerge(files.map((f) => ({ bytes: f.bytes })))), await time(sh('qpdf', ['--empty', '--pages', ...files.map((f) => f.path), '--', join(dir, 'merged.pdf')]))]);
rows.push(['split 50 pages into single pages', 'qpdf --split-pages', await time(() => pdfSplit(one.bytes, { single: true })), await time(sh('qpdf', ['--split-pages', one.path, join(dir, 'split', 'p-%d.pdf')]))]);
rows.push(['20 pages to PNG at 150 dpi', 'pdftoppm -r 150 -png', await time(() => pdfToImages(one.bytes, { pages: '1-20', format: 'png', dpi: 150 })), await time(sh('pdftoppm', ['-r', '150', '-png', '-f', '1', '-l', '20', one.path, join(dir, 'img', 'p')]))]);
rows.push(['20 pages rendered at 150 dpi, raw RGBA (no encoding)', 'pdftoppm -r 150 (PPM, no encoding)', await time(() => pdfToImagesRaw(one.bytes, 20, 150)), await time(sh('pdftoppm', ['-r', '150', '-f', '1', '-l', '20', one.path, join(dir, 'img', 'q')]))]);
rows.push(['20 pages to PNG at 150 dpi (WASM codec)', 'pdftoppm -r 150 -png', await time(() => pdfToImages(one.bytes, { pages: '1-20', format: 'png', dpi: 150, engine: 'wasm' })), rows[2]![3]]);
// no command-line peer removes text; the nearest peer is rasterising every page (what image-only redaction costs)
rows.push(['redact a regex on 50 pages (text removed)', 'pdftoppm -r 150 (rasterise 50 pages)', await time(() => pdfRedact(one.bytes, { regex: ['4711-\\d{4}'] })), await time(sh('pdftoppm', ['-r', '150', '-png', one.path, join(dir, 'img', 'r')]))]);

const ver = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0];
const popplerVersion = spawnSync('pdftoppm', ['-v'], { encoding: 'utf8' }).stderr.split('\n')[0];
const lines = [
  `svc's PDF services (\`src/services/pdf\`, the code behind the \`/svc/v1/pdf-*\` routes) against ${ver('qpdf', ['--version'])} and ${popplerVersion}, on the same files in the same run (\`node --import tsx scripts/bench/pdf.ts\`).`,
  '',
  `Median of ${RUNS} runs, ${cpus().length} CPU(s), Node ${process.version}; inputs: 20 generated 50-page text PDFs (40 lines a page). Ratio = svc / peer (below 1 is faster than the peer).`,
  '',
  '| operation | peer | svc (ms) | peer (ms) | ratio |',
  '| --- | --- | ---: | ---: | ---: |',
  ...rows.map(([op, peer, ours, theirs]) => `| ${op} | ${peer} | ${ours.toFixed(0)} | ${theirs.toFixed(0)} | ${(ours / theirs).toFixed(2)} |`),
  '',
  'No command-line tool removes text from a PDF, so the redaction row is compared with rasterising every page (what image-only redaction costs). pdftoppm spends most of its PNG time in zlib; the raw-RGBA row compares rendering alone.',
  '',
];
const md = lines.join('\n');
console.log(md);
mkdirSync('bench-out', { recursive: true });
writeFileSync(join('bench-out', 'pdf.md'), md);
writeSection('PDF toolkit', md);

/** Render only (PDFium), to separate rendering from PNG encoding. */
async function pdfToImagesRaw(bytes: Uint8Array, pages: number, dpi: number) {
  const m = await loadPdfium();
  const d = openDoc(m, bytes);
  try {
    for (let i = 0; i < pages; i++) renderPage(m, d.doc, i, dpi);
  } finally {
    d.close();
  }
}
void readFileSync;
