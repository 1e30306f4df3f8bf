/**
 * Isolation of heavy work (docs/workers.md), two figures:
 *  1. /health latency (p50, p99, max) while 2 × cores heavy tasks run back to back over HTTP — PDF
 *     (pdf-to-images at 150 dpi of a 10-page PDF) and image (image-convert of a 1500×1000 PNG to WebP on
 *     the WASM codecs) — through the worker pool (the server as shipped; its HTTP clients in a process of
 *     their own), and, as the peer, the same work called on the event loop (how the server ran before the
 *     pool). Each side is measured `repeats` times, interleaved, and the median of each figure is
 *     reported. Goal: p99 < 50 ms.
 *  2. The worker hop's cost on a small PDF task (pdf-info of a one-page PDF): sequential calls per second
 *     in-process on the loop vs through the pool (one task in flight). The pool's operation runs the PDF
 *     limit guard before the work, so the equal work on the loop is guard + pdf-info: the goal's figure is
 *     against that row; the cost against pdf-info alone is printed too. Goal: < 10 %. Medians of several
 *     interleaved runs.
 *   node --import tsx scripts/bench/isolation.ts [seconds=8] [runs=5] [repeats=3]
 */
import { availableParallelism, loadavg } from 'node:os';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import { loadConfig } from '../../src/config.ts';
import { startServer } from '../../src/server.ts';
import { pdfInfo, pdfToImages } from '../../src/services/pdf/index.ts';
import sharp from 'sharp';
import { WorkerPool } from '../../src/services/workers/pool.ts';
import { guardPdf } from '../../src/services/workers/guards.ts';
import { defaultLimits } from '../../src/services/limits.ts';
import { writeSection } from './write-benchmarks.mjs';

const seconds = Number(process.argv[2] ?? 8);
const runs = Number(process.argv[3] ?? 5);
const START_LOAD = loadavg()[0]!.toFixed(1);
const repeats = Number(process.argv[4] ?? 3);
const cores = availableParallelism();
const heavy = 2 * cores;

async function makePdf(pages: number): Promise<Uint8Array> {
  const d = await PDFDocument.create();
  const font = await d.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < pages; i++) {
    const p = d.addPage([612, 792]);
    for (let y = 40; y < 760; y += 18) {
      p.drawText(`Page ${i + 1}, line ${y}: the quick brown fox jumps over the lazy dog`, { x: 36, y, size: 12, font });
    }
    p.drawRectangle({ x: 100, y: 100, width: 400, height: 300, borderWidth: 3, opacity: 0.5 });
  }
  return d.save();
}

/**
 * fetch, tried again on a reset connection: client and server share one process here, so while the loop is
 * held (the peer side) a kept-alive socket can be closed by the server just as the client reuses it.
 */
async function fetchRetry(url: string, init?: RequestInit): Promise<Response> {
  for (let i = 0;; i++) {
    try {
      return await fetch(url, init);
    } catch (e) {
      if (i >= 2) throw e;
    }
  }
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const median = (xs: number[]) => pct(xs, 0.5);

/** /health latencies while `heavy` loops each run `work` back to back for `seconds`. */
async function healthUnderLoad(url: string, work: () => Promise<unknown>): Promise<{ lat: number[]; tasks: number }> {
  let stop = false;
  let tasks = 0;
  const loops = Array.from({ length: heavy }, async () => {
    while (!stop) {
      await work();
      tasks++;
    }
  });
  const lat = await probeHealth(url);
  stop = true;
  await Promise.all(loops);
  return { lat, tasks };
}

/** /health latencies, one request every 20 ms for `seconds`. */
async function probeHealth(url: string): Promise<number[]> {
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const t = performance.now();
    await (await fetchRetry(`${url}/health`)).arrayBuffer();
    lat.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return lat;
}

/**
 * /health latencies while `heavy` HTTP clients POST `body` to `route` back to back. The clients run in a
 * process of their own (scripts/bench/isolation-load.mjs), as real clients do: encoding and sending their
 * bodies is not the server's work, so it does not run on the server's event loop.
 */
async function healthUnderHttpLoad(url: string, route: string, body: string): Promise<{ lat: number[]; tasks: number }> {
  const file = join(dataDir, 'load-body.json');
  await writeFile(file, body);
  const child = spawn(process.execPath, ['scripts/bench/isolation-load.mjs', `${url}${route}`, file, String(heavy)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  while (!out.includes('started\n')) await new Promise((r) => setTimeout(r, 10));
  const lat = await probeHealth(url);
  child.kill('SIGTERM');
  if ((await exited) !== 0) throw new Error(`the load generator failed on ${route}`);
  return { lat, tasks: Number(out.split('\n')[1]) };
}

const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-iso-'));
const srv = await startServer({ ...loadConfig(new Map(), {}), port: 0, dataDir, logLevel: 'error' });
const doc = await makePdf(10);
const body = JSON.stringify({ input_format: 'Base64EncodedFile', file: Buffer.from(doc).toString('base64'), dpi: 150, format: 'png' });
const viaPool = async () => {
  const r = await fetchRetry(`${srv.url}/svc/v1/pdf-to-images`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (r.status !== 200) throw new Error(`pdf-to-images ${r.status}`);
  await r.arrayBuffer();
};
const onLoop = () => pdfToImages(doc, { dpi: 150, format: 'png' });
await viaPool();
await onLoop();

const photo = new Uint8Array(
  await sharp({
    create: { width: 1500, height: 1000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
  }).png().toBuffer(),
);
const imgBody = JSON.stringify({
  input_format: 'Base64EncodedFile',
  file: Buffer.from(photo).toString('base64'),
  format: 'webp',
  quality: 80,
  engine: 'wasm',
});
const imgViaPool = async () => {
  const r = await fetchRetry(`${srv.url}/svc/v1/image-convert`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: imgBody,
  });
  if (r.status !== 200) throw new Error(`image-convert ${r.status} ${await r.text()}`);
  await r.arrayBuffer();
};
await imgViaPool();

type Load = { lat: number[]; tasks: number };
const sides: Record<string, Load[]> = { pdfPool: [], pdfLoop: [], imgPool: [] };
const measure: Record<string, () => Promise<Load>> = {
  pdfPool: () => healthUnderHttpLoad(srv.url, '/svc/v1/pdf-to-images', body),
  pdfLoop: () => healthUnderLoad(srv.url, onLoop),
  imgPool: () => healthUnderHttpLoad(srv.url, '/svc/v1/image-convert', imgBody),
};
for (let i = 0; i < repeats; i++) {
  for (const k of Object.keys(sides)) {
    const t = performance.now();
    sides[k]!.push(await measure[k]!());
    console.error(`${k}: ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
  console.error(`repeat ${i + 1}/${repeats} done`);
}
await srv.stop();
await rm(dataDir, { recursive: true, force: true });

// 2. the hop
const small = await makePdf(1);
const pool = new WorkerPool({ size: 1 });
const N = 25;
const direct = async () => {
  for (let i = 0; i < N; i++) await pdfInfo(small);
};
const guarded = async () => {
  for (let i = 0; i < N; i++) {
    await guardPdf(small, { limits: defaultLimits });
    await pdfInfo(small);
  }
};
const hopped = async () => {
  for (let i = 0; i < N; i++) await pool.run('pdf.info', [small, {}]);
};
await direct();
await guarded();
await hopped();
const tDirect: number[] = [];
const tGuarded: number[] = [];
const tPool: number[] = [];
// Many short interleaved rounds: on a shared machine the load drifts within seconds.
for (let r = 0; r < runs * 8; r++) {
  let t = performance.now();
  await direct();
  tDirect.push(performance.now() - t);
  t = performance.now();
  await guarded();
  tGuarded.push(performance.now() - t);
  t = performance.now();
  await hopped();
  tPool.push(performance.now() - t);
}
await pool.close();
const perSec = (ms: number) => (N / ms) * 1000;
const cost = median(tPool.map((p, i) => 1 - tDirect[i]! / p));
const hopOnly = median(tPool.map((p, i) => 1 - tGuarded[i]! / p));

const f = (x: number) => x.toFixed(1);
const med = (xs: number[]) => f(median(xs));
const row = (name: string, rs: Load[]) =>
  `| ${name} | ${med(rs.map((r) => median(r.lat)))} | ${med(rs.map((r) => pct(r.lat, 0.99)))} | ${
    med(rs.map((r) => Math.max(...r.lat)))
  } | ${rs.map((r) => f(pct(r.lat, 0.99))).join(', ')} | ${median(rs.map((r) => r.lat.length))} | ${median(rs.map((r) => r.tasks))} |`;
const table = [
  `\`node --import tsx scripts/bench/isolation.ts ${seconds} ${runs} ${repeats}\` on ${cores} cores (${process.version}), load average ${
    loadavg()[0]!.toFixed(1)
  } at the end. Load average at start: ${START_LOAD} (2 cores; above ~1 the machine was busy with other work). Each side ran ${repeats} times, interleaved, and the table gives the medians.`,
  '',
  `/health latency (ms) while ${heavy} (2 × cores) heavy tasks run back to back for ${seconds} s: pdf-to-images (10 pages, 150 dpi), or image-convert (1500×1000 PNG → WebP, WASM codecs; the default sharp engine already runs on libuv's threads). In the worker pool rows the ${heavy} HTTP clients run in a process of their own (scripts/bench/isolation-load.mjs) and the /health prober in the server's process; worker threads at the default --worker-nice 10. In the event-loop row the work is called directly on the server's loop. Goal: p99 < 50 ms.`,
  '',
  '| heavy work | runs | p50 | p99 | max | p99 of each run | /health samples | tasks done |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
  row('pdf-to-images | in the worker pool (as shipped)', sides.pdfPool!),
  row('pdf-to-images | on the event loop (peer: before the pool)', sides.pdfLoop!),
  row('image-convert | in the worker pool (as shipped)', sides.imgPool!),
  '',
  'No on-loop peer for image-convert: 2 × cores concurrent WASM conversions on the event loop did not finish within 5 minutes in this harness (not diagnosed), so the comparison is left out.',
  '',
  `Worker hop on a small task: pdf-info of a one-page PDF, rounds of ${N} sequential calls on each path, ${
    runs * 8
  } interleaved rounds; calls/s is the median round, the cost the median of the per-round throughput losses. The pool's pdf.info runs the PDF limit guard first, so the equal work on the loop is the second row. Goal: cost < 10 %.`,
  '',
  '| path | calls/s | cost |',
  '| --- | --- | --- |',
  `| on the event loop | ${f(perSec(median(tDirect)))} | — |`,
  `| on the event loop, with the same limit guard | ${f(perSec(median(tGuarded)))} | — |`,
  `| through the pool (1 worker, limit guard included) | ${f(perSec(median(tPool)))} | the hop: ${
    (hopOnly * 100).toFixed(1)
  } % against the equal work (second row); ${(cost * 100).toFixed(1)} % against pdf-info alone (first row) |`,
].join('\n');
console.log(table);
writeSection('Isolation: /health under heavy load, worker hop cost', table);
