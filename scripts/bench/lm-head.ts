/**
 * svc's own kernels against ONNX Runtime's on the benchmark model's LM head (src/services/inference/lm-head.ts),
 * then decoding with the head on each.
 *
 * 1. The head alone, of the q4 and the q8 file: the same hidden states; ONNX Runtime runs a graph of the
 *    head's own nodes (4 bits at level 4, int8 activations), svc's kernel the weights it packed; 1 and 4
 *    rows, 1 and 2 threads, the two alternating, medians; their logits compared.
 * 2. Decoding: `generate.ts --batch-child DTYPE T` (one stream, then 4 at once) in processes that alternate
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

/** The head of the benchmark model's `dtype` file, alone: ONNX Runtime running its nodes against svc's kernel. */
async function headAlone(dtype: 'q4' | 'q8'): Promise<{ rows: HeadRow[]; path: string; k: number; n: number }> {
  const ort = await import('onnxruntime-node');
  const { graphOfFile, externalBytes } = await import('../../src/services/models/onnx-file.ts');
  const { cutLmHead, headProduct } = await import('../../src/services/inference/lm-head.ts');
  const { node, ONNX, tensor, tensorValueInfo, WireWriter } = await import('../../src/services/models/onnx-wire.ts');
  const { nativeKernels, nativeKernelsUnavailable } = await import('../../src/runtime/kernels.ts');
  const kernels = nativeKernels();
  if (!kernels) throw new Error(`no native kernels: ${nativeKernelsUnavailable()}`);
  const file = join(MODEL_DIR, 'onnx', FILE[dtype]!);
  const { head } = cutLmHead(graphOfFile(file)!.bytes, (t) => externalBytes(file, t))!;
  const { k, n } = head;
  const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  // the head's own nodes, as the file holds them (level 4 for 4 bits, as svc loads it)
  const graph = new WireWriter().string(ONNX.graph.name, 'head');
  if (head.bits === 4) {
    graph
      .message(
        ONNX.graph.node,
        node('MatMulNBits', ['x', 'b', 's'], ['y'], 'head', 'com.microsoft', { K: k, N: n, bits: 4, block_size: 32, accuracy_level: 4 }),
      )
      .message(ONNX.graph.initializer, tensor('b', [n, k / 32, 16], ONNX.dtype.UINT8, head.b))
      .message(ONNX.graph.initializer, tensor('s', [n * (k / 32)], ONNX.dtype.FLOAT, bytes(head.scales)));
  } else {
    graph
      .message(ONNX.graph.node, node('DynamicQuantizeLinear', ['x'], ['q', 'qs', 'qz'], 'quantize'))
      .message(ONNX.graph.node, node('MatMulInteger', ['q', 'w', 'qz', 'wz'], ['i'], 'product'))
      .message(ONNX.graph.node, node('Cast', ['i'], ['f'], 'cast', '', { to: ONNX.dtype.FLOAT }))
      .message(ONNX.graph.node, node('Mul', ['qs', 'ws'], ['sc'], 'scales'))
      .message(ONNX.graph.node, node('Mul', ['f', 'sc'], ['y'], 'scaled'))
      .message(ONNX.graph.initializer, tensor('w', [k, n], ONNX.dtype.INT8, bytes(head.w)))
      .message(ONNX.graph.initializer, tensor('ws', [n], ONNX.dtype.FLOAT, bytes(head.scales)))
      .message(ONNX.graph.initializer, tensor('wz', [], ONNX.dtype.INT8, Uint8Array.of(head.zeroPoint & 255)));
  }
  graph.message(ONNX.graph.input, tensorValueInfo('x', ONNX.dtype.FLOAT)).message(
    ONNX.graph.output,
    tensorValueInfo('y', ONNX.dtype.FLOAT),
  );
  const model = new WireWriter()
    .varint(ONNX.model.irVersion, 8)
    .message(ONNX.model.graph, graph)
    .message(ONNX.model.opsetImport, new WireWriter().string(ONNX.opset.domain, '').varint(ONNX.opset.version, 17))
    .message(ONNX.model.opsetImport, new WireWriter().string(ONNX.opset.domain, 'com.microsoft').varint(ONNX.opset.version, 1))
    .finish();
  const rows: HeadRow[] = [];
  for (const threads of [1, 2]) {
    const multiply = headProduct(head, kernels, threads);
    // as the server creates its sessions when it runs the head itself: ONNX Runtime's threads stop spinning
    // at the end of each run, so they leave the cores to the kernel
    const s = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      extra: { session: { force_spinning_stop: '1' } },
    });
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
        multiply(x, m, y);
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

function batchChild(dtype: string, threads: number, own: boolean): BatchRun {
  const p = spawnSync(process.execPath, [
    '--import',
    'tsx',
    join(dirname(new URL(import.meta.url).pathname), 'generate.ts'),
    '--batch-child',
    dtype,
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
const DTYPES = ['q4', 'q8'] as const;
const heads = [];
for (const dtype of DTYPES) heads.push({ dtype, ...(await headAlone(dtype)) });
console.error(heads);
const decode: { dtype: string; threads: number; ort: BatchRun; svc: BatchRun }[] = [];
for (const threads of [1, 2]) {
  for (const dtype of DTYPES) {
    const runs = { ort: [] as BatchRun[], svc: [] as BatchRun[] };
    for (let r = 0; r < RUNS; r++) {
      for (const own of [false, true]) {
        console.error(`decode: ${dtype}, ${own ? 'svc' : 'ONNX Runtime'} head, ${threads} thread(s), run ${r + 1}/${RUNS}`);
        (own ? runs.svc : runs.ort).push(batchChild(dtype, threads, own));
      }
    }
    const med = (xs: BatchRun[]): BatchRun => ({
      oneTps: median(xs.map((x) => x.oneTps)),
      fourTps: median(xs.map((x) => x.fourTps)),
      stepOne: median(xs.map((x) => x.stepOne)),
      stepFour: median(xs.map((x) => x.stepFour)),
    });
    decode.push({ dtype, threads, ort: med(runs.ort), svc: med(runs.svc) });
  }
}

const body = [
  `\`node --import tsx scripts/bench/lm-head.ts\`: the LM head of the benchmark model (${heads[0]!.n} × ${
    heads[0]!.k
  }) in its q4 file (4 bits in blocks of 32: ONNX Runtime's \`MatMulNBits\` at level 4, int8 activations) and its q8 file (int8 with a scale per column: DynamicQuantizeLinear, MatMulInteger, Cast and the scales, which ONNX Runtime fuses into \`DynamicQuantizeMatMul\`), run by ONNX Runtime and by svc's own kernels (src/runtime/kernels.ts, path \`${
    heads[0]!.path
  }\`, weights packed once). Machine: ${machineNote()}.`,
  '',
  `The head alone: the same hidden states on both, calls alternating, medians of ${CALLS}; "difference" = the largest logit difference over the largest logit.`,
  '',
  '| file | rows | threads | ONNX Runtime (ms) | svc kernel (ms) | × faster | difference |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...heads.flatMap((h) =>
    h.rows.map((r) =>
      `| ${h.dtype} | ${r.rows} | ${r.threads} | ${f(r.ort)} | ${f(r.svc)} | ${f(r.ort / r.svc)} | ${r.err.toExponential(1)} |`
    )
  ),
  '',
  `Decoding with the head on each (\`generate.ts --batch-child\`: greedy, EOS masked, 32 tokens a stream; one stream, then 4 at once; processes alternate SVC_NATIVE_KERNELS=0, where ONNX Runtime runs the whole graph, and svc's kernel; medians of ${RUNS} processes, each the median of 3 rounds):`,
  '',
  '| file | threads | head | 1 stream (tok/s) | 4 streams aggregate (tok/s) | × one stream | decode step, 1 row / 4 rows (ms) |',
  '|---|---:|---|---:|---:|---:|---:|',
  ...decode.flatMap((d) =>
    (['ort', 'svc'] as const).map((side) => {
      const r = d[side];
      return `| ${d.dtype} | ${d.threads} | ${side === 'ort' ? 'ONNX Runtime' : 'svc kernel'} | ${f(r.oneTps, 1)} | ${f(r.fourTps, 1)} | ${
        f(r.fourTps / r.oneTps)
      } | ${f(r.stepOne, 1)} / ${f(r.stepFour, 1)} |`;
    })
  ),
].join('\n');
console.log(body);
writeSection('Text generation: own LM head kernel', body);
