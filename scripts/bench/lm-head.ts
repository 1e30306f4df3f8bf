/**
 * svc's own 4-bit kernel against ONNX Runtime's `MatMulNBits` on the benchmark model's LM head
 * (src/services/inference/lm-head.ts), then decoding with the head on each.
 *
 * 1. The head alone: the q4 file's head weights (151936 × 896, blocks of 32), the same hidden states; ONNX
 *    Runtime runs a graph of that one node at level 4 (int8 activations), svc's kernel the weights it packed;
 *    1 and 4 rows, 1 and 2 threads, the two alternating, medians; their logits compared.
 * 2. Decoding: `generate.ts --batch-child q4 T` (one stream, then 4 at once) in processes that alternate
 *    ONNX Runtime's head (SVC_NATIVE_KERNELS=0) and svc's.
 *
 * Run: node --import tsx scripts/bench/lm-head.ts   (writes its section of BENCHMARKS.md)   BENCH_RUNS=3
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { FILE, MODEL_DIR } from './generate.ts';
import { machineNote, median } from './helpers.ts';
import { writeSection } from './write-benchmarks.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CALLS = 21;

interface HeadRow {
  rows: number;
  threads: number;
  ort: number;
  svc: number;
  err: number;
}

async function headAlone(): Promise<{ rows: HeadRow[]; path: string; k: number; n: number }> {
  const ort = await import('onnxruntime-node');
  const { graphOfFile, externalBytes } = await import('../../src/services/models/onnx-file.ts');
  const { cutLmHead } = await import('../../src/services/inference/lm-head.ts');
  const { node, ONNX, tensor, tensorValueInfo, WireWriter } = await import('../../src/services/models/onnx-wire.ts');
  const { nativeKernels, nativeKernelsUnavailable } = await import('../../src/runtime/kernels.ts');
  const kernels = nativeKernels();
  if (!kernels) throw new Error(`no native kernels: ${nativeKernelsUnavailable()}`);
  const file = join(MODEL_DIR, 'onnx', FILE.q4!);
  const { head } = cutLmHead(graphOfFile(file)!.bytes, (t) => externalBytes(file, t))!;
  if (head.bits !== 4) throw new Error(`the q4 file's head is ${head.bits}-bit`);
  const { k, n } = head;
  const graph = new WireWriter()
    .message(
      ONNX.graph.node,
      node('MatMulNBits', ['x', 'b', 's'], ['y'], 'head', 'com.microsoft', { K: k, N: n, bits: 4, block_size: 32, accuracy_level: 4 }),
    )
    .string(ONNX.graph.name, 'head')
    .message(ONNX.graph.initializer, tensor('b', [n, k / 32, 16], ONNX.dtype.UINT8, head.b))
    .message(ONNX.graph.initializer, tensor('s', [n * (k / 32)], ONNX.dtype.FLOAT, new Uint8Array(head.scales.buffer)))
    .message(ONNX.graph.input, tensorValueInfo('x', ONNX.dtype.FLOAT))
    .message(ONNX.graph.output, tensorValueInfo('y', ONNX.dtype.FLOAT));
  const model = new WireWriter()
    .varint(ONNX.model.irVersion, 8)
    .message(ONNX.model.graph, graph)
    .message(ONNX.model.opsetImport, new WireWriter().string(ONNX.opset.domain, '').varint(ONNX.opset.version, 17))
    .message(ONNX.model.opsetImport, new WireWriter().string(ONNX.opset.domain, 'com.microsoft').varint(ONNX.opset.version, 1))
    .finish();
  const packed = kernels.packQ4(head.b, head.scales, k, n);
  const rows: HeadRow[] = [];
  for (const threads of [1, 2]) {
    const s = await ort.InferenceSession.create(model, { intraOpNumThreads: threads, interOpNumThreads: 1 });
    for (const m of [1, 4]) {
      // hidden states like a final RMSNorm's: unit variance, a few large channels
      const x = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.731) * (i % 97 === 0 ? 6 : 1));
      const y = new Float32Array(m * n);
      const feed = { x: new ort.Tensor('float32', x, [m, k]) };
      const times = { ort: [] as number[], svc: [] as number[] };
      let want: Float32Array = new Float32Array(0);
      for (let c = 0; c < CALLS + 2; c++) {
        let t = performance.now();
        want = (await s.run(feed)).y!.data as Float32Array;
        if (c >= 2) times.ort.push(performance.now() - t);
        t = performance.now();
        kernels.matmulQ4(packed, x, m, y, threads);
        if (c >= 2) times.svc.push(performance.now() - t);
      }
      let d = 0, big = 0;
      for (let i = 0; i < y.length; i++) (d = Math.max(d, Math.abs(y[i]! - want[i]!))), (big = Math.max(big, Math.abs(want[i]!)));
      rows.push({ rows: m, threads, ort: median(times.ort), svc: median(times.svc), err: d / big });
    }
    await s.release();
  }
  return { rows, path: kernels.path, k, n };
}

interface BatchRun {
  oneTps: number;
  fourTps: number;
  stepOne: number;
  stepFour: number;
}

function batchChild(threads: number, own: boolean): BatchRun {
  const p = spawnSync(process.execPath, [
    '--import',
    'tsx',
    join(dirname(new URL(import.meta.url).pathname), 'generate.ts'),
    '--batch-child',
    'q4',
    String(threads),
  ], {
    encoding: 'utf8',
    env: { ...process.env, SVC_NATIVE_KERNELS: own ? '1' : '0', BENCH_RUNS: '3' },
    maxBuffer: 64 << 20,
  });
  const line = p.stdout.split('\n').find((l) => l.startsWith('@@RESULT '));
  if (!line) throw new Error(`batch child failed (${p.status}): ${p.stderr.slice(-2000)}`);
  const r = JSON.parse(line.slice(9));
  if (r.error) throw new Error(r.error);
  return r;
}

const f = (x: number, d = 2) => x.toFixed(d);
const head = await headAlone();
console.error(head.rows);
const decode: { threads: number; ort: BatchRun; svc: BatchRun }[] = [];
for (const threads of [1, 2]) {
  const runs = { ort: [] as BatchRun[], svc: [] as BatchRun[] };
  for (let r = 0; r < RUNS; r++) {
    for (const own of [false, true]) {
      console.error(`decode: ${own ? 'svc' : 'ONNX Runtime'} head, ${threads} thread(s), run ${r + 1}/${RUNS}`);
      (own ? runs.svc : runs.ort).push(batchChild(threads, own));
    }
  }
  const med = (xs: BatchRun[]): BatchRun => ({
    oneTps: median(xs.map((x) => x.oneTps)),
    fourTps: median(xs.map((x) => x.fourTps)),
    stepOne: median(xs.map((x) => x.stepOne)),
    stepFour: median(xs.map((x) => x.stepFour)),
  });
  decode.push({ threads, ort: med(runs.ort), svc: med(runs.svc) });
}

const body = [
  `\`node --import tsx scripts/bench/lm-head.ts\`: the LM head of the benchmark model's q4 file (${head.n} × ${head.k}, 4 bits in blocks of 32), by ONNX Runtime's \`MatMulNBits\` (level 4: int8 activations) and by svc's own kernel (src/runtime/kernels.ts, path \`${head.path}\`, weights packed once). Machine: ${machineNote()}.`,
  '',
  `The head alone: the same hidden states on both, calls alternating, medians of ${CALLS}; "difference" = the largest logit difference over the largest logit.`,
  '',
  '| rows | threads | ONNX Runtime (ms) | svc kernel (ms) | × faster | difference |',
  '|---:|---:|---:|---:|---:|---:|',
  ...head.rows.map((r) => `| ${r.rows} | ${r.threads} | ${f(r.ort)} | ${f(r.svc)} | ${f(r.ort / r.svc)} | ${r.err.toExponential(1)} |`),
  '',
  `Decoding with the head on each (\`generate.ts --batch-child q4\`: greedy, EOS masked, 32 tokens a stream; one stream, then 4 at once; processes alternate SVC_NATIVE_KERNELS=0 and svc's kernel; medians of ${RUNS} processes, each the median of 3 rounds):`,
  '',
  '| threads | head | 1 stream (tok/s) | 4 streams aggregate (tok/s) | × one stream | decode step, 1 row / 4 rows (ms) |',
  '|---:|---|---:|---:|---:|---:|',
  ...decode.flatMap((d) =>
    (['ort', 'svc'] as const).map((side) => {
      const r = d[side];
      return `| ${d.threads} | ${side === 'ort' ? 'ONNX Runtime' : 'svc kernel'} | ${f(r.oneTps, 1)} | ${f(r.fourTps, 1)} | ${
        f(r.fourTps / r.oneTps)
      } | ${f(r.stepOne, 1)} / ${f(r.stepFour, 1)} |`;
    })
  ),
].join('\n');
console.log(body);
writeSection('Text generation: own 4-bit LM head', body);
