/**
 * PDF toolkit benchmark against qpdf / pdftoppm on the same files, in the same run.
 * Run: node --import tsx scripts/bench/pdf.ts   (writes the "PDF toolkit" section of BENCHMARKS.md and bench-out/pdf.md)
 * Needs qpdf and poppler-utils on PATH.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { pdfMerge } from '../../src/services/pdf/pdf-merge.ts';
import { pdfSplit } from '../../src/services/pdf/pdf-split.ts';
import { pdfToImages, renderPage } from '../../src/services/pdf/pdf-to-images.ts';
import { loadPdfium, openDoc } from '../../src/services/pdf/pdfium.ts';
import { loadSharp } from '../../src/services/pdf/encode-image.ts';
import { writeSection } from './write-benchmarks.mjs';
import { machineNote, medianTime } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-pdf-'));
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

async function makeDoc(pages: number, tag: number): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 1; p <= pages; p++) {
    const page = doc.addPage([612, 792]);
    for (let l = 0; l < 40; l++) {
      page.drawText(`Doc ${tag} page ${p} line ${l}: account 4711-${String(1000 + l)} lorem ipsum dolor sit amet`, {
        x: 50,
        y: 750 - l * 17,
        size: 10,
        font,
      });
    }
  }
  return doc.save();
}

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

// Equal I/O: the svc side reads its input from the same file and writes every output file, as the CLI does.
// The CLI also pays a process start, measured below and reported beside the table.
const readIn = (path: string) => new Uint8Array(readFileSync(path));
const writeAll = (prefix: string, outs: Uint8Array[], ext: string) => outs.forEach((b, i) => writeFileSync(`${prefix}-${i + 1}.${ext}`, b));
const sizeOf = (files: string[]) => files.reduce((n, f) => n + statSync(f).size, 0);
const pngsIn = (sub: string, prefix: string) =>
  readdirSync(join(dir, sub)).filter((f) => f.startsWith(prefix) && f.endsWith('.png')).map((f) => join(dir, sub, f));

/** Interleaved medians: each run times svc then the peer, so any load on the machine hits both alike. */
async function pair(svc: () => unknown, peer: () => unknown): Promise<[number, number]> {
  const a: number[] = [], b: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    a.push(await medianTime(svc, 1));
    b.push(await medianTime(peer, 1));
  }
  const med = (t: number[]) => t.sort((x, y) => x - y)[Math.floor(t.length / 2)]!;
  return [med(a), med(b)];
}

type Row = { op: string; peer: string; svc: number; peerMs: number; svcMB?: number; peerMB?: number };
const rows: Row[] = [];
const add = async (op: string, peer: string, svc: () => unknown, peerFn: () => unknown, sizes?: () => [number, number]) => {
  const [a, b] = await pair(svc, peerFn);
  const [sa, sb] = sizes ? sizes() : [undefined, undefined];
  rows.push({ op, peer, svc: a, peerMs: b, svcMB: sa, peerMB: sb });
};

await add(
  'merge 20 × 50 pages',
  'qpdf --empty --pages',
  async () => writeFileSync(join(dir, 'merged-svc.pdf'), await pdfMerge(files.map((f) => ({ bytes: readIn(f.path) })))),
  sh('qpdf', ['--empty', '--pages', ...files.map((f) => f.path), '--', join(dir, 'merged.pdf')]),
);
await add(
  'split 50 pages into single pages',
  'qpdf --split-pages',
  async () => writeAll(join(dir, 'split', 's'), await pdfSplit(readIn(one.path), { single: true }), 'pdf'),
  sh('qpdf', ['--split-pages', one.path, join(dir, 'split', 'p-%d.pdf')]),
);
mkdirSync(join(dir, 'img-svc'), { recursive: true });
const toPng = (engine: 'sharp' | 'wasm', prefix: string) => async () =>
  writeAll(
    join(dir, 'img-svc', prefix),
    (await pdfToImages(readIn(one.path), { pages: '1-20', format: 'png', dpi: 150, engine })).map((p) => p.bytes),
    'png',
  );
const popplerPng = sh('pdftoppm', ['-r', '150', '-png', '-f', '1', '-l', '20', one.path, join(dir, 'img', 'p')]);
await add(
  '20 pages to PNG at 150 dpi (sharp, zlib level 6)',
  'pdftoppm -r 150 -png (zlib default level)',
  toPng('sharp', 'n'),
  popplerPng,
  () => [sizeOf(pngsIn('img-svc', 'n-')) / 20, sizeOf(pngsIn('img', 'p-')) / 20],
);
await add(
  '20 pages rendered at 150 dpi, raw RGBA (no encoding)',
  'pdftoppm -r 150 (PPM, no encoding)',
  () => pdfToImagesRaw(readIn(one.path), 20, 150),
  sh('pdftoppm', ['-r', '150', '-f', '1', '-l', '20', one.path, join(dir, 'img', 'q')]),
);

// The WASM PNG codec has no compression setting and compresses far less than zlib 6: compare it with libvips
// (sharp) at the zlib level whose output is closest in size, so both sides do equal compression work.
await toPng('wasm', 'w')();
const wasmSize = sizeOf(pngsIn('img-svc', 'w-')) / 20;
const rgba = await (async () => {
  const m = await loadPdfium();
  const d = openDoc(m, readIn(one.path));
  try {
    return renderPage(m, d.doc, 0, 150);
  } finally {
    d.close();
  }
})();
const sharp = (await loadSharp())!;
let level = 0, best = Infinity;
for (let l = 0; l <= 9; l++) {
  const n =
    (await sharp(rgba.data, { raw: { width: rgba.width, height: rgba.height, channels: 4 } }).png({ compressionLevel: l }).toBuffer())
      .length;
  const firstWasm = statSync(join(dir, 'img-svc', 'w-1.png')).size;
  if (Math.abs(n - firstWasm) < best) {
    best = Math.abs(n - firstWasm);
    level = l;
  }
}
const sharpAtLevel = async () => {
  const pages = await pdfToImagesRawPages(readIn(one.path), 20, 150);
  const outs: Uint8Array[] = [];
  for (const p of pages) {
    outs.push(
      new Uint8Array(
        await sharp(p.data, { raw: { width: p.width, height: p.height, channels: 4 } }).png({ compressionLevel: level }).toBuffer(),
      ),
    );
  }
  writeAll(join(dir, 'img-svc', 'l'), outs, 'png');
};
await add(
  '20 pages to PNG at 150 dpi (WASM codec)',
  `render + libvips PNG at zlib level ${level} (closest output size)`,
  toPng('wasm', 'w'),
  sharpAtLevel,
  () => [wasmSize, sizeOf(pngsIn('img-svc', 'l-')) / 20],
);

const spawnCost = await pair(sh('qpdf', ['--version']), sh('pdftoppm', ['-v']));
const ver = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0];
const popplerVersion = spawnSync('pdftoppm', ['-v'], { encoding: 'utf8' }).stderr.split('\n')[0];
const mb = (n?: number) => (n === undefined ? '' : (n / 1e6).toFixed(2));
const lines = [
  `svc's PDF services (\`src/services/pdf\`, the code behind the \`/svc/v1/pdf-*\` routes) against ${
    ver('qpdf', ['--version'])
  } and ${popplerVersion}, on the same files in the same run (\`node --import tsx scripts/bench/pdf.ts\`).`,
  '',
  `Median of ${RUNS} interleaved runs (svc, then the peer, each run), ${machineNote()}; inputs: 20 generated 50-page text PDFs (40 lines a page). Ratio = svc / peer (below 1 is faster than the peer).`,
  '',
  'Equal I/O: the svc side reads its input from the same file and writes every output file, as the command-line tools do. The tools also start a process each time: `qpdf --version` takes ' +
  spawnCost[0].toFixed(0) + ' ms and `pdftoppm -v` ' + spawnCost[1].toFixed(0) + ' ms here, included in their times.',
  '',
  '| operation | peer | svc (ms) | peer (ms) | ratio | svc MB/page | peer MB/page |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) =>
    `| ${r.op} | ${r.peer} | ${r.svc.toFixed(0)} | ${r.peerMs.toFixed(0)} | ${(r.svc / r.peerMs).toFixed(2)} | ${mb(r.svcMB)} | ${
      mb(r.peerMB)
    } |`
  ),
  '',
  'PNG rows compare equal compression: sharp and pdftoppm both deflate at zlib level 6; the WASM codec (@jsquash/png) has no level setting and writes much larger files, so it is compared with the same renderer plus libvips at the zlib level whose output size is closest to its own.',
  '',
];
const md = lines.join('\n');
console.log(md);
mkdirSync('bench-out', { recursive: true });
writeFileSync(join('bench-out', 'pdf.md'), md);
writeSection('PDF toolkit', md);
rmSync(dir, { recursive: true, force: true }); // the inputs and outputs timed above

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

async function pdfToImagesRawPages(bytes: Uint8Array, pages: number, dpi: number) {
  const m = await loadPdfium();
  const d = openDoc(m, bytes);
  try {
    return Array.from({ length: pages }, (_, i) => renderPage(m, d.doc, i, dpi));
  } finally {
    d.close();
  }
}
