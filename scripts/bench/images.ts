/**
 * Image convert and resize throughput: svc's image-convert service (sharp engine and WASM engine)
 * against sharp (libvips) called directly and ImageMagick's `convert`, on the same files with the same
 * settings (same output size and quality), in the same run, sides interleaved.
 * Run: node --import tsx scripts/bench/images.ts   (writes the "Images" section of BENCHMARKS.md)
 * Needs ImageMagick on PATH.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { imageConvert } from '../../src/services/images/convert.ts';
import type { OutputFormat } from '../../src/services/images/codecs.ts';
import { writeSection } from './write-benchmarks.mjs';
import { machineNote, median } from './helpers.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-img-'));
const MAX = 268_402_689;

function fixture(name: string, size: string, seed: number, ext: string, extra: string[] = []): string {
  const p = join(dir, `${name}.${ext}`);
  execFileSync('convert', ['-size', size, 'plasma:fractal', '-seed', String(seed), '-blur', '0x1', '-depth', '8', ...extra, p]);
  return p;
}

interface Case {
  label: string;
  input: string;
  format: OutputFormat;
  width?: number;
  quality: number;
  wasm: boolean;
}
const photo = fixture('photo', '3000x2000', 1, 'jpg', ['-quality', '90']);
const png = fixture('graphic', '2000x1500', 2, 'png');
const cases: Case[] = [
  { label: 'JPEG 3000×2000 → JPEG 800 px wide, q80', input: photo, format: 'jpeg', width: 800, quality: 80, wasm: true },
  { label: 'JPEG 3000×2000 → WebP 800 px wide, q80', input: photo, format: 'webp', width: 800, quality: 80, wasm: true },
  { label: 'JPEG 3000×2000 → JPEG full size, q85 (convert only)', input: photo, format: 'jpeg', quality: 85, wasm: false },
  { label: 'PNG 2000×1500 → WebP full size, q80 (convert only)', input: png, format: 'webp', quality: 80, wasm: false },
];

const ms = (x: number) => x.toFixed(0);

const rows: string[] = [];
for (const c of cases) {
  const bytes = new Uint8Array(readFileSync(c.input));
  const out = join(dir, `out.${c.format === 'jpeg' ? 'jpg' : c.format}`);
  const sides: Record<string, () => Promise<number>> = {
    svc: async () =>
      (await imageConvert(bytes, { format: c.format, width: c.width, quality: c.quality, engine: 'sharp', maxPixels: MAX })).outputs[0]!
        .bytes.length,
    ...(c.wasm
      ? {
        'svc wasm': async () =>
          (await imageConvert(bytes, { format: c.format, width: c.width, quality: c.quality, engine: 'wasm', maxPixels: MAX })).outputs[0]!
            .bytes.length,
      }
      : {}),
    sharp: async () => {
      let s = sharp(bytes);
      if (c.width) s = s.resize({ width: c.width, kernel: 'lanczos3' });
      return (await (c.format === 'jpeg' ? s.jpeg({ quality: c.quality }) : s.webp({ quality: c.quality })).toBuffer()).length;
    },
    imagemagick: async () => {
      execFileSync('convert', [c.input, ...(c.width ? ['-resize', `${c.width}x`] : []), '-quality', String(c.quality), out]);
      return statSync(out).size;
    },
  };
  const times: Record<string, number[]> = {};
  const sizes: Record<string, number> = {};
  for (const name of Object.keys(sides)) await sides[name]!(); // warm-up: codecs loaded, caches filled
  for (let r = 0; r < RUNS; r++) {
    for (const [name, fn] of Object.entries(sides)) {
      const s = performance.now();
      sizes[name] = await fn();
      (times[name] ??= []).push(performance.now() - s);
    }
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  rows.push(
    `| ${c.label} | ${ms(m.svc!)} | ${m['svc wasm'] ? ms(m['svc wasm']) : '–'} | ${ms(m.sharp!)} | ${ms(m.imagemagick!)} | ${
      (m.svc! / m.sharp!).toFixed(2)
    } | ${(m.svc! / m.imagemagick!).toFixed(2)} | ${Object.entries(sizes).map(([k, v]) => `${k} ${(v / 1024).toFixed(0)}`).join(', ')} |`,
  );
  console.log(rows[rows.length - 1]);
}

const imVersion = execFileSync('convert', ['-version'], { encoding: 'utf8' }).split('\n')[0]!.replace(/^Version: /, '');
const body = [
  `svc's image-convert service (\`imageConvert\` in \`src/services/images\`, the code behind \`POST /svc/v1/image-convert\`) against sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}) called directly and ${imVersion} (\`convert\`, one process per image), on the same files with the same output size (Lanczos3 resize) and quality, in the same run (\`node --import tsx scripts/bench/images.ts\`).`,
  '',
  `Median wall time in ms over ${RUNS} interleaved runs, one image at a time, after one warm-up call per side; ${machineNote()}.`,
  '"svc" runs these conversions as one libvips pipeline (no watermark, CMYK or TIFF/BMP writer asked, so no pixels cross into JavaScript) plus its own header pixel check and metadata written at byte level; "svc wasm" uses the @jsquash WASM codecs and photon\'s resize (the path of the single binary, Deno and Bun without the sharp addon). ImageMagick times include its process start.',
  '',
  '| work | svc | svc wasm | sharp | ImageMagick | svc / sharp | svc / ImageMagick | output KiB |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ...rows,
].join('\n');
writeSection('Images: convert and resize', body);
rmSync(dir, { recursive: true, force: true }); // the inputs and outputs timed above
console.log(body);
