/**
 * Writes the ground-truth corpus: for each source, `<name>.html` → `<name>.pdf` (Chromium's print to PDF:
 * justified text, running header/footer, monospace <pre>, tables, CSS columns), `<name>.md` (the truth),
 * and for `scan` sources `<name>.scan.pdf`: every page rasterised at 200 dpi by pdftoppm, skewed and
 * noised by ImageMagick, wrapped back into an image-only PDF.
 * Run: node --import tsx scripts/bench/doc-corpus/make-corpus.ts [dir]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PDFDocument } from '@cantoo/pdf-lib';
import { type SourceDoc, SOURCES, toHtml, toMarkdown } from './sources.ts';

export interface CorpusDoc {
  name: string;
  kind: 'text' | 'scan';
  pdf: string;
  truth: string;
  pages: number;
}

/** Chromium's print to PDF of an HTML file. */
export function htmlToPdf(html: string, pdf: string): void {
  execFileSync('chromium', [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--no-pdf-header-footer',
    `--print-to-pdf=${pdf}`,
    `file://${resolve(html)}`,
  ], { stdio: 'ignore', timeout: 60_000 });
}

/** Rasterise every page (200 dpi gray), rotate by `skew` degrees, add noise, and wrap as an image-only PDF. */
export async function scanOf(pdf: string, out: string, skew = 1.5): Promise<void> {
  const base = out.replace(/\.pdf$/, '');
  execFileSync('pdftoppm', ['-r', '200', '-gray', '-png', pdf, base]);
  const pngs = readdirSync(join(base, '..')).filter((f) => f.startsWith(`${base.split('/').pop()}-`) && f.endsWith('.png')).sort();
  const doc = await PDFDocument.create();
  for (const f of pngs) {
    const png = join(base, '..', f), jpg = png.replace(/\.png$/, '.jpg');
    execFileSync('convert', [
      png,
      '-seed',
      '11',
      '-background',
      'white',
      '-rotate',
      String(skew),
      '-attenuate',
      '0.25',
      '+noise',
      'Gaussian',
      '-colorspace',
      'Gray',
      '-quality',
      '85',
      jpg,
    ]);
    const img = await doc.embedJpg(readFileSync(jpg));
    const w = (img.width * 72) / 200, h = (img.height * 72) / 200;
    doc.addPage([w, h]).drawImage(img, { x: 0, y: 0, width: w, height: h });
  }
  writeFileSync(out, await doc.save());
}

/** Sources rendered as scans too (OCR is slow: keep the scanned part small). */
const SCANNED = new Set(['programming-code']);

export async function makeCorpus(dir: string, sources: SourceDoc[] = SOURCES): Promise<CorpusDoc[]> {
  mkdirSync(dir, { recursive: true });
  const out: CorpusDoc[] = [];
  for (const s of sources) {
    const html = join(dir, `${s.name}.html`), pdf = join(dir, `${s.name}.pdf`), truth = join(dir, `${s.name}.md`);
    writeFileSync(html, toHtml(s));
    writeFileSync(truth, toMarkdown(s));
    htmlToPdf(html, pdf);
    const pages = (await PDFDocument.load(readFileSync(pdf))).getPageCount();
    out.push({ name: s.name, kind: 'text', pdf, truth, pages });
    if (SCANNED.has(s.name)) {
      const scan = join(dir, `${s.name}.scan.pdf`);
      await scanOf(pdf, scan);
      out.push({ name: `${s.name} (scan)`, kind: 'scan', pdf: scan, truth, pages });
    }
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.argv[2] ?? 'corpus-out';
  for (const d of await makeCorpus(dir)) console.log(`${d.kind}\t${d.pages} pages\t${d.pdf}`);
}
