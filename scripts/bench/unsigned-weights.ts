/**
 * 8-bit files with uint8 weights (as transformers.js' quantizer writes graphs that have a Conv): one call of
 * the benchmark model's q8 graph, its weights rewritten as uint8 by `scripts/models/q8-unsigned.py`, on
 * ONNX Runtime as the file is and through svc's CPU session (which makes them int8 on a CPU with VNNI:
 * src/services/inference/int8-weights.ts), in one process, calls alternating; the logits are compared bit
 * for bit. The graph svc's own quantizer writes (int8 weights) is timed beside them.
 *
 * Run: node --import tsx scripts/bench/unsigned-weights.ts   (writes its section of BENCHMARKS.md)
 *   BENCH_RUNS=7 BENCH_LENGTHS=1,82,512
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { hasVnni } from '../../src/runtime/cpu.ts';
import { initBackend } from '../../src/services/inference/backend.ts';
import { importOnnxruntimeNode } from '../../src/services/inference/onnxruntime-node.ts';
import { FILE, MODEL_DIR } from './generate.ts';
import { machineNote, median } from './helpers.ts';
import { writeSection } from './write-benchmarks.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const LENGTHS = (process.env.BENCH_LENGTHS ?? '1,82,512').split(',').map(Number);

type Ort = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

const int8File = join(MODEL_DIR, 'onnx', FILE.q8!);
const uint8File = join(`${MODEL_DIR}-uint8`, 'onnx', FILE.q8!);
if (!existsSync(uint8File)) {
  mkdirSync(join(`${MODEL_DIR}-uint8`, 'onnx'), { recursive: true });
  execFileSync('/usr/bin/python3', ['scripts/models/q8-unsigned.py', int8File, uint8File], { stdio: ['ignore', 'ignore', 'inherit'] });
}

const ort = (await importOnnxruntimeNode()) as unknown as Ort;
const options = { intraOpNumThreads: 1, interOpNumThreads: 1 };
const asIs = await ort.InferenceSession.create(uint8File, options);
await initBackend('cpu');
const svc = await ort.InferenceSession.create(uint8File, options);
const own = await ort.InferenceSession.create(int8File, options);
const converted = (svc as unknown as { edits: { signedWeights: number } }).edits.signedWeights;

function feeds(s: Session, L: number): Record<string, unknown> {
  const t = (xs: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
  const f: Record<string, unknown> = {
    input_ids: t(Array.from({ length: L }, (_, i) => 100 + i)),
    attention_mask: t(Array(L).fill(1)),
    position_ids: t(Array.from({ length: L }, (_, i) => i)),
  };
  for (const name of s.inputNames) {
    if (name.startsWith('past_key_values.')) f[name] = new ort.Tensor('float32', new Float32Array(0), [1, 2, 0, 64]);
    if (name === 'num_logits_to_keep') f[name] = new ort.Tensor('int64', BigInt64Array.of(1n), []);
  }
  return f;
}

const sides = { asIs, svc, own } as const;
const rows: string[] = [];
let identical = true;
for (const L of LENGTHS) {
  const times: Record<keyof typeof sides, number[]> = { asIs: [], svc: [], own: [] };
  for (let r = 0; r < RUNS + 1; r++) {
    const out: Partial<Record<keyof typeof sides, Float32Array>> = {};
    for (const [k, s] of Object.entries(sides) as [keyof typeof sides, Session][]) {
      const f = feeds(s, L);
      const t = performance.now();
      out[k] = (await s.run(f as never)).logits!.data as Float32Array;
      if (r > 0) times[k].push(performance.now() - t); // the first round warms up
    }
    identical &&= out.asIs!.length === out.svc!.length && out.asIs!.every((x, i) => x === out.svc![i]);
  }
  const m = (k: keyof typeof sides) => median(times[k]);
  rows.push(`| ${L} | ${m('asIs').toFixed(1)} | ${m('svc').toFixed(1)} | ${(m('asIs') / m('svc')).toFixed(2)} | ${m('own').toFixed(1)} |`);
  console.error(rows.at(-1));
}

const body = [
  `The q8 graph of "svc against llama.cpp (same weights)" with its int8 weights rewritten as uint8 (each weight and its zero point moved up by 128, the same products) by \`scripts/models/q8-unsigned.py\` with the \`onnx\` package. transformers.js' quantizer writes uint8 weights for every graph that has a Conv (vision encoders, Whisper's encoder) or one of ONNX Runtime's attention operators. One session call of L tokens on an empty cache, one intra-op thread: "as is" = ONNX Runtime on the uint8 file; "svc" = the same file through svc's CPU session, which made ${converted} uint8 weights int8 (src/services/inference/int8-weights.ts; only on a CPU with VNNI, which this one ${
    hasVnni() ? 'has' : 'lacks'
  }); "int8 file" = the graph svc's quantizer writes. Calls alternate, medians of ${RUNS}. Logits of "as is" and "svc" identical bit for bit in every call: ${
    identical ? 'yes' : 'NO'
  }. Machine: ${machineNote()}.`,
  '',
  '| tokens in the call | as is (ms) | svc (ms) | as is / svc | int8 file (ms) |',
  '|---:|---:|---:|---:|---:|',
  ...rows,
].join('\n');
writeSection('8-bit files with unsigned weights', body);
console.log(body);
process.exit(0);
