/**
 * Time and memory to load the benchmark model (Qwen2.5-0.5B's shape, q8 and q4) until it can serve a request,
 * each load in a process of its own, the sides alternating: svc's `loadModel` on its native CPU backend (one
 * intra-op thread); the same with transformers.js reading the model's local files its own way (its cache
 * hook off: src/services/inference/local-files.ts), which is how svc loaded before; and llama.cpp (the
 * prebuilt one node-llama-cpp ships) loading the same weights as GGUF and making a 512-token context on one
 * thread. Reports medians of the load time, of the process's peak resident memory
 * (`process.resourceUsage().maxRSS`) and of the server thread's largest ArrayBuffer total seen during the load
 * (sampled every 10 ms).
 *
 * Run: node --import tsx scripts/bench/model-load.ts   (writes its section of BENCHMARKS.md)   BENCH_RUNS=5
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { MODEL_DIR } from './generate.ts';
import { machineNote, median } from './helpers.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const GGUF: Record<string, string> = { q8: 'llama-q8_0.gguf', q4: 'llama-q4_0.gguf' };
const SIDES = {
  before: "svc, transformers.js' own local file reading",
  svc: 'svc',
  llama: 'llama.cpp (model and a 512-token context)',
} as const;
type Side = keyof typeof SIDES;

async function child(side: Side, dtype: string): Promise<void> {
  let buffers = 0;
  const sample = setInterval(() => (buffers = Math.max(buffers, process.memoryUsage().arrayBuffers)), 10);
  const t0 = performance.now();
  if (side === 'llama') {
    const { getLlama } = await import('node-llama-cpp');
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
    const lm = await llama.loadModel({ modelPath: join(MODEL_DIR, GGUF[dtype]!) });
    await lm.createContext({ contextSize: 512, threads: 1, sequences: 1 });
  } else {
    if (side === 'before') {
      // svc's cache hook cannot be switched on: transformers.js looks local files up as it does by itself
      const { env } = await import('@huggingface/transformers');
      Object.defineProperty(env, 'useCustomCache', { get: () => false, set: () => {}, configurable: true });
    }
    const { loadModel } = await import('../../src/services/inference/load.ts');
    await loadModel(MODEL_DIR, 'text-generation', { backend: 'cpu', dtype: dtype as never, threads: 1 });
  }
  const ms = performance.now() - t0;
  clearInterval(sample);
  const mib = (b: number) => Math.round(b / 2 ** 20);
  const peak = mib(process.resourceUsage().maxRSS * 1024);
  console.log(`@@RESULT ${JSON.stringify({ ms: Math.round(ms), peak, buffers: mib(buffers) })}`);
  process.exit(0);
}

if (process.argv[2] === '--child') await child(process.argv[3] as Side, process.argv[4]!);

const rows: string[] = [];
for (const dtype of ['q8', 'q4']) {
  const seen: Record<Side, { ms: number; peak: number; buffers: number }[]> = { before: [], svc: [], llama: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const side of Object.keys(SIDES) as Side[]) {
      const p = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench/model-load.ts', '--child', side, dtype], {
        encoding: 'utf8',
        maxBuffer: 16 << 20,
      });
      const line = p.stdout.split('\n').find((l) => l.startsWith('@@RESULT '));
      if (!line) throw new Error(`${side} ${dtype}: ${p.stderr.trim().split('\n').slice(-3).join(' / ')}`);
      seen[side].push(JSON.parse(line.slice(9)));
      console.error(dtype, side, line.slice(9));
    }
  }
  for (const side of Object.keys(SIDES) as Side[]) {
    const m = (k: 'ms' | 'peak' | 'buffers') => median(seen[side].map((x) => x[k]));
    rows.push(`| ${dtype} | ${SIDES[side]} | ${(m('ms') / 1000).toFixed(2)} | ${m('peak')} | ${m('buffers')} |`);
  }
}

const body = [
  `\`node --import tsx scripts/bench/model-load.ts\`: the benchmark model (Qwen2.5-0.5B's shape, random weights; svc's q8 file 0.63 GB, q4 0.45 GB; the same weights as GGUF Q8_0 and Q4_0 for llama.cpp) loaded until it can serve a request, each load in a fresh process (the files in the page cache), one thread, the sides alternating, medians of ${RUNS}. svc's load covers its backend, the tokenizer, the graph edits, the weights repacked for its kernels and ONNX Runtime's sessions; llama.cpp's covers its backend, the model (mapped from the file) and a 512-token context. "transformers.js' own local file reading": transformers.js streams every local file it looks up into memory, the ONNX files too, which svc hands to ONNX Runtime by path; svc now answers those from transformers.js' cache hook (src/services/inference/local-files.ts). Server thread's ArrayBuffers = the largest \`process.memoryUsage().arrayBuffers\` seen during the load. Machine: ${machineNote()}.`,
  '',
  "| dtype | loaded by | load (s) | peak resident (MiB) | server thread's ArrayBuffers, peak (MiB) |",
  '|---|---|---:|---:|---:|',
  ...rows,
].join('\n');
const { writeSection } = await import('./write-benchmarks.mjs');
writeSection('Model load', body);
console.log(body);
