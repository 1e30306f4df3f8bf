/**
 * Memory of a loaded 4-bit model: the benchmark model's q4 graph as svc's quantizer writes it, and as the
 * hub's q4 files are made (`scripts/models/hub-q4.py`: no accuracy_level, fp32 embedding table), each
 * loaded in a process of its own by ONNX Runtime alone (onnxruntime-node on the file's path), by svc's native
 * CPU backend, and by svc's WASM backend; then 20 calls of a 4-token prompt. Reports the process's resident
 * memory after them and its peak (`process.resourceUsage().maxRSS`); medians of the runs, sides alternating.
 *
 * Run: node --import tsx scripts/bench/model-memory.ts   (writes its section of BENCHMARKS.md)   BENCH_RUNS=3
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { FILE, MODEL_DIR } from './generate.ts';
import { machineNote, median } from './helpers.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SIDES = { ort: 'ONNX Runtime alone (native, the file as it is)', svc: 'svc, native CPU', wasm: 'svc, WASM' } as const;
type Side = keyof typeof SIDES;

async function child(side: Side, file: string): Promise<void> {
  const { initBackend } = await import('../../src/services/inference/backend.ts');
  const { importOnnxruntimeNode } = await import('../../src/services/inference/onnxruntime-node.ts');
  let ort = (await importOnnxruntimeNode()) as unknown as typeof import('onnxruntime-node');
  if (side !== 'ort') await initBackend(side === 'svc' ? 'cpu' : 'wasm');
  if (side === 'wasm') ort = (globalThis as Record<symbol, unknown>)[Symbol.for('onnxruntime')] as typeof ort;
  const s = await ort.InferenceSession.create(file, { intraOpNumThreads: 1 });
  const t = (xs: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
  const feeds: Record<string, unknown> = { input_ids: t([1, 2, 3, 4]), attention_mask: t([1, 1, 1, 1]), position_ids: t([0, 1, 2, 3]) };
  for (const n of s.inputNames) {
    if (n.startsWith('past_key_values.')) feeds[n] = new ort.Tensor('float32', new Float32Array(0), [1, 2, 0, 64]);
    if (n === 'num_logits_to_keep') feeds[n] = new ort.Tensor('int64', BigInt64Array.of(1n), []);
  }
  for (let i = 0; i < 20; i++) await s.run(feeds as never);
  await new Promise((r) => setTimeout(r, 500));
  const mib = (b: number) => Math.round(b / 2 ** 20);
  console.log(`@@RESULT ${JSON.stringify({ rss: mib(process.memoryUsage().rss), peak: mib(process.resourceUsage().maxRSS * 1024) })}`);
  process.exit(0);
}

if (process.argv[2] === '--child') await child(process.argv[3] as Side, process.argv[4]!);

const own = join(MODEL_DIR, 'onnx', FILE.q4!);
const hub = join(`${MODEL_DIR}-hubq4`, 'onnx', FILE.q4!);
if (!existsSync(hub)) {
  mkdirSync(join(`${MODEL_DIR}-hubq4`, 'onnx'), { recursive: true });
  execFileSync('/usr/bin/python3', ['scripts/models/hub-q4.py', join(MODEL_DIR, 'onnx', FILE.fp32!), hub], { stdio: 'inherit' });
}
const files = { 'svc quantizer q4 (int8 embedding table)': own, 'hub-style q4 (fp32 embedding table, no level)': hub };
const rows: string[] = [];
for (const [label, file] of Object.entries(files)) {
  const seen: Record<Side, { rss: number; peak: number }[]> = { ort: [], svc: [], wasm: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const side of Object.keys(SIDES) as Side[]) {
      const p = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench/model-memory.ts', '--child', side, file], {
        encoding: 'utf8',
        maxBuffer: 16 << 20,
      });
      const line = p.stdout.split('\n').find((l) => l.startsWith('@@RESULT '));
      if (!line) throw new Error(`${side} on ${file}: ${p.stderr.trim().split('\n').slice(-3).join(' / ')}`);
      seen[side].push(JSON.parse(line.slice(9)));
      console.error(label, side, line.slice(9));
    }
  }
  for (const side of Object.keys(SIDES) as Side[]) {
    rows.push(`| ${label} | ${SIDES[side]} | ${median(seen[side].map((x) => x.rss))} | ${median(seen[side].map((x) => x.peak))} |`);
  }
}

const body = [
  `\`node --import tsx scripts/bench/model-memory.ts\`: the benchmark model's q4 graph (Qwen2.5-0.5B's shape) loaded in a process of its own, then 20 calls of a 4-token prompt, one intra-op thread; resident memory after them and the process's peak, in MiB, medians of ${RUNS} runs with the sides alternating. svc's native backend reads the file's graph without its weights (src/services/models/onnx-file.ts), edits it where it creates the session and then collects the garbage those bytes leave (src/services/inference/ort-sessions.ts, src/runtime/gc.ts); ONNX Runtime reads the weights from the file itself. On WASM every weight sits in onnxruntime-web's memory, handed over as external data in the model's own bytes so that each is copied in once (src/services/models/onnx-file.ts): 4-bit weights as int8 (src/services/inference/wasm-q4.ts) and a q4 graph's fp32 embedding tables as int8 (src/services/inference/q4-embeddings.ts). Machine: ${machineNote()}.`,
  '',
  '| graph | loaded by | resident after 20 calls (MiB) | peak (MiB) |',
  '|---|---|---:|---:|',
  ...rows,
].join('\n');
const { writeSection } = await import('./write-benchmarks.mjs');
writeSection('4-bit files from the hub: memory', body);
console.log(body);
