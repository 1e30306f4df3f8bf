/**
 * Does a real-sized model's inference hold the event loop? The same session work (a long prompt's
 * prefill, then decode steps on its KV cache) on the benchmark model (the qwen2.5-0.5b shape, q8, one
 * intra-op thread), once with the session created in process as onnxruntime-node does by itself (its `run`
 * computes synchronously on the calling thread), once through the server's inference thread
 * (src/services/inference/ort-thread.ts). Each side in its own process, alternating; event-loop delay from
 * perf_hooks (1 ms resolution); medians of the runs.
 *
 * Run: node --import tsx scripts/bench/prefill-loop.ts [promptTokens] [runs]   (writes its BENCHMARKS.md section)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { FILE, median, MODEL_DIR } from './generate.ts';

const PROMPT = Number(process.argv[2] ?? 3000);
const RUNS = Number(process.argv[3] ?? 3);
const STEPS = 16;

interface SideResult {
  wallMs: number;
  p50: number;
  p99: number;
  max: number;
}

async function side(which: 'in-process' | 'thread', promptTokens: number): Promise<SideResult> {
  if (which === 'thread') await (await import('../../src/services/inference/backend.ts')).initBackend('cpu');
  const ort = await import('onnxruntime-node');
  const s = await ort.InferenceSession.create(join(MODEL_DIR, 'onnx', FILE.q8!), {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  if ((s.constructor.name === 'ThreadSession') !== (which === 'thread')) throw new Error(`${which}: session is a ${s.constructor.name}`);
  const c = JSON.parse(readFileSync(join(MODEL_DIR, 'config.json'), 'utf8'));
  const [heads, hd] = [c.num_key_value_heads, c.hidden_size / c.num_attention_heads];
  const i64 = (xs: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), dims);
  const pastNames = s.inputNames.filter((n) => n.startsWith('past_key_values.'));
  // as the server's decode loop does: the cache in two arenas per layer, read from one and written into
  // the other by ONNX Runtime (a preallocated output), swapped after each call; in the thread they are
  // held there (src/services/inference/ort-thread.ts), in process they are plain arrays
  const cap = heads * (promptTokens + STEPS + 8) * hd;
  type Arena = Float32Array | { id: number; length: number };
  const held = s as unknown as {
    hold?(lengths: number[]): Promise<{ id: number; length: number }[]>;
    runHeld?(f: unknown, o: unknown): Promise<unknown>;
  };
  const arenas: Arena[] = held.hold
    ? await held.hold(pastNames.flatMap(() => [cap, cap]))
    : pastNames.flatMap(() => [new Float32Array(cap), new Float32Array(cap)]);
  let cur = new Map(pastNames.map((n, i) => [n, arenas[2 * i]!]));
  let spare = new Map(pastNames.map((n, i) => [n, arenas[2 * i + 1]!]));
  const view = (a: Arena, positions: number) => {
    const dims = [1, heads, positions, hd];
    const length = heads * positions * hd;
    return a instanceof Float32Array ? new ort.Tensor('float32', a.subarray(0, length), dims) : { held: a.id, offset: 0, length, dims };
  };
  const step = async (ids: number[], past: number) => {
    const total = past + ids.length;
    const f: Record<string, unknown> = {
      input_ids: i64(ids, [1, ids.length]),
      attention_mask: i64(Array(total).fill(1), [1, total]),
      position_ids: i64(ids.map((_, i) => past + i), [1, ids.length]),
      num_logits_to_keep: i64([1], []),
    };
    const o: Record<string, unknown> = {};
    for (const n of pastNames) {
      f[n] = view(cur.get(n)!, past);
      o[n.replace('past_key_values.', 'present.')] = view(spare.get(n)!, total);
    }
    if (held.runHeld) await held.runHeld(f, o);
    else await s.run(f as never, { ...o, logits: null } as never);
    [cur, spare] = [spare, cur];
  };
  const ids = Array.from({ length: promptTokens }, (_, i) => 100 + ((i * 7919) % 30000));
  await step(ids.slice(0, 8), 0); // warm-up
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const t0 = performance.now();
  await step(ids, 0);
  for (let i = 0; i < STEPS; i++) await step([42], promptTokens + i);
  const wallMs = performance.now() - t0;
  h.disable();
  await s.release();
  return { wallMs, p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6 };
}

if (process.argv[2] === '--side') {
  const r = await side(process.argv[3] as 'in-process' | 'thread', Number(process.argv[4]));
  process.stdout.write(`@@RESULT ${JSON.stringify(r)}\n`);
  process.exit(0);
}

const { writeSection } = await import('./write-benchmarks.mjs');
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const startLoad = load();
const results: Record<string, SideResult[]> = { 'in-process': [], thread: [] };
for (let r = 0; r < RUNS; r++) {
  for (const which of ['in-process', 'thread'] as const) {
    const p = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench/prefill-loop.ts', '--side', which, String(PROMPT)], {
      encoding: 'utf8',
      env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
    });
    const line = p.stdout.split('\n').find((l) => l.startsWith('@@RESULT '));
    if (!line) throw new Error(`${which}: ${p.stdout}\n${p.stderr}`);
    results[which]!.push(JSON.parse(line.slice(9)));
    console.error(which, line.slice(9));
  }
}
const f = (x: number) => x.toFixed(1);
const row = (which: string, xs: SideResult[]) =>
  `| ${which} | ${f(median(xs.map((x) => x.wallMs)))} | ${f(median(xs.map((x) => x.p50)))} | ${f(median(xs.map((x) => x.p99)))} | ${
    f(median(xs.map((x) => x.max)))
  } |`;
const body = [
  `\`node --import tsx scripts/bench/prefill-loop.ts ${PROMPT} ${RUNS}\`: the qwen2.5-0.5b-shaped benchmark model (q8, one intra-op thread), a ${PROMPT}-token prompt's prefill then ${STEPS} decode steps on its KV cache, the same session calls on both sides, the cache in preallocated arenas that ONNX Runtime writes (as the server's decode loop keeps it; held in the thread on that side). "in process" = the session as onnxruntime-node creates it (its \`run\` computes synchronously on the calling thread: the server's, before this change); "inference thread" = created through the server's backend, which runs CPU sessions in their own thread (src/services/inference/ort-thread.ts). Each side in its own process, alternating, medians of ${RUNS}. Event-loop delay in ms (perf_hooks, 1 ms resolution). Machine: ${cpus().length} × ${
    cpus()[0]?.model ?? 'CPU'
  }, Node ${process.version}; load average at start ${startLoad}, at the end ${load()}.`,
  '',
  '| session | wall ms | loop delay p50 | p99 | max |',
  '| --- | ---: | ---: | ---: | ---: |',
  row('in process', results['in-process']!),
  row('inference thread', results.thread!),
].join('\n');
console.log(body);
writeSection('Inference and the event loop: a long prefill on a 0.5B model', body);
