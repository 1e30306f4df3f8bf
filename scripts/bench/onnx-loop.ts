/**
 * Does model inference block the event loop? The event loop's delay (perf_hooks histogram, 1 ms
 * resolution) while the server generates 200 tokens and embeds a 100,000-character input, per backend,
 * on the tiny fixture models served by the local hub stand-in. Run per backend in its own process
 * (one ONNX Runtime per process):
 *   node --import tsx scripts/bench/onnx-loop.ts [cpu|wasm]
 * Without an argument it runs both and writes the BENCHMARKS.md section.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startHarness } from '../../test/routes/ollama/harness.ts';
import { writeSection } from './write-benchmarks.mjs';

const backend = process.argv[2];
if (!backend) {
  const loadAtStart = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const rows: string[] = [];
  for (const b of ['cpu', 'wasm']) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench/onnx-loop.ts', b], {
      encoding: 'utf8',
      env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
    });
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    if (!line.startsWith('|')) throw new Error(`${b}: ${r.stdout}\n${r.stderr}`);
    rows.push(line);
  }
  const table = [
    `\`node --import tsx scripts/bench/onnx-loop.ts\` — event-loop delay (ms) while inference runs, tiny fixture models (tiny-llama, tiny-bert-embed); WASM sessions run in their own thread (src/services/inference/ort-thread.ts). Load average at start: ${loadAtStart} (2 cores).`,
    '',
    '| backend | work | wall ms | loop delay p50 | p99 | max |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.flatMap((r) => r.split(' ;; ')),
  ].join('\n');
  console.log(table);
  writeSection('Inference and the event loop', table);
  process.exit(0);
}

const h = await startHarness({ backend: backend as 'cpu' });
const post = async (path: string, body: unknown) => {
  const r = await h.post(path, body);
  if (r.status !== 200) throw new Error(`${path} ${r.status} ${await r.text()}`);
  return r.json();
};
await post('/api/pull', { model: 'tiny-llama:test', stream: false });
await post('/api/pull', { model: 'tiny-bert-embed:test', stream: false });
await post('/api/generate', { model: 'tiny-llama:test', prompt: 'warm', stream: false, options: { num_predict: 2 } });
await post('/api/embed', { model: 'tiny-bert-embed:test', input: 'warm' });

const measure = async (work: string, fn: () => Promise<unknown>) => {
  const h2 = monitorEventLoopDelay({ resolution: 1 });
  h2.enable();
  const t = performance.now();
  await fn();
  const wall = performance.now() - t;
  h2.disable();
  const ms = (ns: number) => (ns / 1e6).toFixed(1);
  return `| ${backend} | ${work} | ${wall.toFixed(0)} | ${ms(h2.percentile(50))} | ${ms(h2.percentile(99))} | ${ms(h2.max)} |`;
};
const gen = await measure(
  'generate 200 tokens',
  () =>
    post('/api/generate', {
      model: 'tiny-llama:test',
      prompt: 'Once upon a time',
      stream: false,
      options: { num_predict: 200, temperature: 0 },
    }),
);
const emb = await measure(
  'embed 100,000 characters',
  () => post('/api/embed', { model: 'tiny-bert-embed:test', input: 'lorem ipsum dolor sit amet '.repeat(3700) }),
);
await h.close();
console.log(`${gen} ;; ${emb}`);
process.exit(0);
