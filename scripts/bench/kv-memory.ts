/**
 * Memory and speed of decode steps on a long KV cache, with the decoder's attention as exported (each layer
 * concatenates its past and the new positions into `present`, which ONNX Runtime computes whether or not a
 * call fetches it) and read apart (src/services/inference/past-and-new.ts, `present` switched off). Both
 * sides are the benchmark model's q8 graph rewritten as the server rewrites it for a native CPU session,
 * the only difference being that second pass; the calls are the batch decoder's: the cache fed at a fixed
 * capacity (the positions past its length masked), only the logits and `new_key_values.*` fetched.
 * Each side runs in a process of its own; sides alternate; medians of the runs.
 *
 * Run: node --import tsx scripts/bench/kv-memory.ts   (writes its section of BENCHMARKS.md)   BENCH_RUNS=3
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FILE, MODEL_DIR } from './generate.ts';
import { machineNote, median } from './helpers.ts';
import { writeSection } from './write-benchmarks.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const STEPS = 12;
/** [rows, cached positions] */
const CASES: [number, number][] = [[1, 2000], [4, 4000]];
const SIDES = { concatenated: 'as exported (past and new concatenated)', apart: 'past and new apart' } as const;
type Side = keyof typeof SIDES;
/** The positions per row the batch decoder holds for a cache of `len` (src/services/inference/batch-decoder.ts). */
const capacity = (len: number) => len + 32 + (len >> 3);

async function child(side: Side, rows: number, past: number): Promise<void> {
  const ort = await import('onnxruntime-node');
  const { graphOfFile } = await import('../../src/services/models/onnx-file.ts');
  const { decoderShape, rewriteDecoder } = await import('../../src/services/inference/decoder-graph.ts');
  const { withInt8Activations } = await import('../../src/services/inference/nbits-accuracy.ts');
  const { PRESENT_SWITCH } = await import('../../src/services/inference/past-and-new.ts');
  const file = join(MODEL_DIR, 'onnx', FILE.q8!);
  const config = JSON.parse(readFileSync(join(MODEL_DIR, 'config.json'), 'utf8'));
  const shape = decoderShape(config)!;
  const rewritten = rewriteDecoder(graphOfFile(file)!.bytes, shape, { pastAndNew: side === 'apart' })!;
  if ((rewritten.pastAndNew > 0) !== (side === 'apart')) throw new Error(`${side}: ${rewritten.pastAndNew} layers rewritten`);
  const graph = withInt8Activations(rewritten.bytes)?.bytes ?? rewritten.bytes;
  const s = await ort.InferenceSession.create(graph, {
    intraOpNumThreads: 1,
    extra: { session: { model_external_initializers_file_folder_path: dirname(file) } },
  });
  const headDim = shape.headDim ?? config.hidden_size / shape.heads;
  const cap = capacity(past);
  const i64 = (xs: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), dims);
  const feeds: Record<string, InstanceType<typeof ort.Tensor>> = {
    input_ids: i64(Array.from({ length: rows }, (_, i) => 100 + i), [rows, 1]),
    position_ids: i64(Array(rows).fill(past), [rows, 1]),
    attention_mask: i64(Array.from({ length: rows }, () => [...Array(past).fill(1), ...Array(cap - past).fill(0), 1]).flat(), [
      rows,
      cap + 1,
    ]),
    num_logits_to_keep: i64([1], []),
  };
  if (side === 'apart') feeds[PRESENT_SWITCH] = new ort.Tensor('bool', [false], []);
  for (const n of s.inputNames) {
    if (!n.startsWith('past_key_values.')) continue;
    const data = new Float32Array(rows * shape.kvHeads * cap * headDim).map((_, i) => Math.sin(i) * 0.5);
    feeds[n] = new ort.Tensor('float32', data, [rows, shape.kvHeads, cap, headDim]);
  }
  const fetches = ['logits', ...s.outputNames.filter((n) => n.startsWith('new_key_values.'))];
  const times: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    const t = performance.now();
    await s.run(feeds, fetches);
    times.push(performance.now() - t);
  }
  const mib = (b: number) => Math.round(b / 2 ** 20);
  const result = { rss: mib(process.memoryUsage().rss), peak: mib(process.resourceUsage().maxRSS * 1024), stepMs: median(times.slice(2)) };
  console.log(`@@RESULT ${JSON.stringify(result)}`);
  process.exit(0);
}

if (process.argv[2] === '--child') await child(process.argv[3] as Side, Number(process.argv[4]), Number(process.argv[5]));

const config = JSON.parse(readFileSync(join(MODEL_DIR, 'config.json'), 'utf8'));
const perPosition = 2 * config.num_hidden_layers * config.num_key_value_heads * (config.hidden_size / config.num_attention_heads) * 4;
const rowsOut: string[] = [];
const spread: string[] = [];
for (const [rows, past] of CASES) {
  const seen: Record<Side, { rss: number; peak: number; stepMs: number }[]> = { concatenated: [], apart: [] };
  for (let r = 0; r < RUNS; r++) {
    for (const side of Object.keys(SIDES) as Side[]) {
      console.error(`${side}: ${rows} row(s), ${past} cached positions, run ${r + 1}/${RUNS}`);
      const p = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'scripts/bench/kv-memory.ts', '--child', side, String(rows), String(past)],
        {
          encoding: 'utf8',
          maxBuffer: 16 << 20,
        },
      );
      const line = p.stdout.split('\n').find((l) => l.startsWith('@@RESULT '));
      if (!line) throw new Error(`${side}: ${p.stderr.trim().split('\n').slice(-3).join(' / ')}`);
      seen[side].push(JSON.parse(line.slice(9)));
    }
  }
  const m = (side: Side, k: 'rss' | 'peak' | 'stepMs') => median(seen[side].map((x) => x[k]));
  const each = (side: Side) => seen[side].map((x) => `${x.rss} MiB ${x.stepMs.toFixed(1)} ms`).join(', ');
  spread.push(`- ${rows} row(s), ${past} positions: as exported ${each('concatenated')}; apart ${each('apart')}`);
  const kvMiB = Math.round((rows * capacity(past) * perPosition) / 2 ** 20);
  rowsOut.push(
    `| ${rows} | ${past} | ${kvMiB} | ${m('concatenated', 'rss')} / ${m('concatenated', 'peak')} | ${m('apart', 'rss')} / ${
      m('apart', 'peak')
    } | ${m('concatenated', 'rss') - m('apart', 'rss')} | ${m('concatenated', 'stepMs').toFixed(1)} | ${m('apart', 'stepMs').toFixed(1)} |`,
  );
}

const body = [
  `\`node --import tsx scripts/bench/kv-memory.ts\`: the benchmark model's q8 graph (Qwen2.5-0.5B's shape: 24 layers, 2 KV heads of 64), one intra-op thread, ${STEPS} decode steps of one new token per row on a cache fed at the batch decoder's capacity for its length, only the logits and the new keys and values fetched (the batch decoder's calls). Each side in its own process, alternating, medians of ${RUNS}. Resident memory after the steps / peak (MiB). Machine: ${machineNote()}.`,
  '',
  `| rows | cached positions | KV cache fed (MiB) | ${SIDES.concatenated}: resident / peak | ${SIDES.apart}: resident / peak | saved (MiB) | step as exported (ms) | step apart (ms) |`,
  '|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rowsOut,
  '',
  'Every run (resident memory, median step):',
  '',
  ...spread,
  '',
  "As exported, every layer's attention reads `present` (the past and the new positions concatenated), so ONNX Runtime computes it at every step, fetched or not, and keeps room for a second copy of the whole cache in its own memory. Read apart, no step makes that copy; the `present` outputs are computed only when a call fetches them (a prefill, transformers.js' own loop).",
].join('\n');
writeSection('Text generation: KV cache memory (past and new positions apart)', body);
console.log(body);
