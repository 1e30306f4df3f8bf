/**
 * svc's own kernels (src/runtime/kernels.ts) against ONNX Runtime's on the benchmark model's weights, then
 * decoding with them and without.
 *
 * 1. The LM head alone, of the q4 and the q8 file (src/services/inference/lm-head.ts): the same hidden
 *    states; ONNX Runtime runs a graph of the head's own nodes (4 bits at level 4, int8 activations), svc's
 *    kernel the weights it packed; 1 and 4 rows, 1 and 2 threads, the two alternating, medians; their
 *    outputs compared.
 * 2. The q4 file's 24 MLPs (src/services/inference/weight-split.ts), one after another as a decode step
 *    reads them (196 MB: their weights come from memory, not cache): ONNX Runtime runs a graph of their own
 *    nodes, svc's `mlpQ4` each in turn; 1 and 4 rows, 1 thread.
 * 3. Decoding: `generate.ts --batch-child DTYPE T` (one stream, then 4 at once) in processes that alternate
 *    ONNX Runtime alone (SVC_NATIVE_KERNELS=0) and svc's kernels.
 *
 * Run: node --import tsx scripts/bench/own-kernels.ts   (writes its section of BENCHMARKS.md)   BENCH_RUNS=3
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { FILE, MODEL_DIR } from './generate.ts';
import { machineNote, median } from './helpers.ts';
import { writeSection } from './write-benchmarks.mjs';
import type { Q4Product, WeightProduct } from '../../src/services/inference/weight-split.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);

type Wire = typeof import('../../src/services/models/onnx-wire.ts');

/** A model of one graph, with the operator sets ONNX Runtime's MatMulNBits and the standard nodes need. */
function modelOf(graph: InstanceType<Wire['WireWriter']>, W: Wire['WireWriter'], ONNX: Wire['ONNX']): Uint8Array {
  return new W()
    .varint(ONNX.model.irVersion, 8)
    .message(ONNX.model.graph, graph)
    .message(ONNX.model.opsetImport, new W().string(ONNX.opset.domain, '').varint(ONNX.opset.version, 17))
    .message(ONNX.model.opsetImport, new W().string(ONNX.opset.domain, 'com.microsoft').varint(ONNX.opset.version, 1))
    .finish();
}
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
  const model = modelOf(graph, WireWriter, ONNX);
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

/** The q4 file's MLPs one after another: ONNX Runtime running their nodes against svc's `mlpQ4`, 1 thread. */
async function mlpsAlone(): Promise<{ rows: number; ort: number; svc: number; err: number; layers: number }[]> {
  const ort = await import('onnxruntime-node');
  const { graphOfFile, externalBytes } = await import('../../src/services/models/onnx-file.ts');
  const { splitAtWeights } = await import('../../src/services/inference/weight-split.ts');
  const { node, ONNX, tensor, tensorValueInfo, WireWriter } = await import('../../src/services/models/onnx-wire.ts');
  const { nativeKernels } = await import('../../src/runtime/kernels.ts');
  const kernels = nativeKernels()!;
  const file = join(MODEL_DIR, 'onnx', FILE.q4!);
  const split = splitAtWeights(graphOfFile(file)!.bytes, (t) => externalBytes(file, t))!;
  const q4 = (p: WeightProduct): Q4Product => {
    if (p.bits !== 4) throw new Error(`${file} holds products of ${p.bits} bits`);
    return p;
  };
  const mlps = split.stages.flatMap((s) =>
    s.kind === 'kernels'
      ? s.calls.flatMap((c) => (c.kind === 'mlp' ? [{ gate: q4(c.mlp.gate), up: q4(c.mlp.up), down: q4(c.mlp.down) }] : []))
      : []
  );
  const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const graph = new WireWriter().string(ONNX.graph.name, 'mlps');
  mlps.forEach((m, l) => {
    for (const [name, p] of [['gate', m.gate], ['up', m.up], ['down', m.down]] as const) {
      graph.message(
        ONNX.graph.node,
        node(
          'MatMulNBits',
          [name === 'down' ? `h${l}` : 'x', `${name}${l}`, `${name}${l}s`],
          [`${name}${l}y`],
          `${name}${l}`,
          'com.microsoft',
          {
            K: p.k,
            N: p.n,
            bits: 4,
            block_size: 32,
            accuracy_level: 4,
          },
        ),
      );
      graph.message(ONNX.graph.initializer, tensor(`${name}${l}`, [p.n, p.k / 32, 16], ONNX.dtype.UINT8, p.b));
      graph.message(ONNX.graph.initializer, tensor(`${name}${l}s`, [p.n * (p.k / 32)], ONNX.dtype.FLOAT, bytes(p.scales)));
    }
    graph
      .message(ONNX.graph.node, node('Sigmoid', [`gate${l}y`], [`s${l}`], `sig${l}`))
      .message(ONNX.graph.node, node('Mul', [`gate${l}y`, `s${l}`], [`silu${l}`], `silu${l}`))
      .message(ONNX.graph.node, node('Mul', [`silu${l}`, `up${l}y`], [`h${l}`], `h${l}`))
      .message(ONNX.graph.output, tensorValueInfo(`down${l}y`, ONNX.dtype.FLOAT));
  });
  graph.message(ONNX.graph.input, tensorValueInfo('x', ONNX.dtype.FLOAT));
  const model = modelOf(graph, WireWriter, ONNX);
  const packed = mlps.map((m) => [m.gate, m.up, m.down].map((p) => kernels.packQ4(p.b, p.scales, p.k, p.n)));
  const s = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const out = [];
  // 1 and 4 rows: decode steps; 256: a prompt's prefill call (src/services/inference/batch-decoder.ts)
  for (const m of [1, 4, 256]) {
    const k = mlps[0]!.gate.k;
    const x = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i * 0.731) * (i % 97 === 0 ? 6 : 1));
    const ys = mlps.map(() => new Float32Array(m * k));
    const feed = { x: new ort.Tensor('float32', x, [m, k]) };
    const times = { ort: [] as number[], svc: [] as number[] };
    let want: Record<string, { data: unknown }> = {};
    for (let c = 0; c < CALLS + 2; c++) {
      let t = performance.now();
      want = await s.run(feed);
      if (c >= 2) times.ort.push(performance.now() - t);
      t = performance.now();
      packed.forEach(([g, u, d], l) => kernels.mlpQ4(g!, u!, d!, x, m, ys[l]!, 1));
      if (c >= 2) times.svc.push(performance.now() - t);
    }
    let d = 0, big = 0;
    ys.forEach((y, l) => {
      const w = want[`down${l}y`]!.data as Float32Array;
      for (let i = 0; i < y.length; i++) (d = Math.max(d, Math.abs(y[i]! - w[i]!))), (big = Math.max(big, Math.abs(w[i]!)));
    });
    out.push({ rows: m, ort: median(times.ort), svc: median(times.svc), err: d / big, layers: mlps.length });
  }
  await s.release();
  return out;
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
const mlps = await mlpsAlone();
console.error(mlps);
const decode: { dtype: string; threads: number; ort: BatchRun; svc: BatchRun }[] = [];
for (const threads of [1, 2]) {
  for (const dtype of DTYPES) {
    const runs = { ort: [] as BatchRun[], svc: [] as BatchRun[] };
    for (let r = 0; r < RUNS; r++) {
      for (const own of [false, true]) {
        console.error(`decode: ${dtype}, ${own ? 'svc kernels' : 'ONNX Runtime alone'}, ${threads} thread(s), run ${r + 1}/${RUNS}`);
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
  `\`node --import tsx scripts/bench/own-kernels.ts\`: the LM head of the benchmark model (${heads[0]!.n} × ${
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
  `The q4 file's ${
    mlps[0]!.layers
  } MLPs one after another (196 MB of weights, so they come from memory as in a decode step), 1 thread, 1 and 4 rows (decode steps) and 256 (a prefill call): ONNX Runtime running a graph of their nodes (3 \`MatMulNBits\` at level 4, Sigmoid, 2 Mul each) against svc's \`mlpQ4\` called for each; medians of ${CALLS}:`,
  '',
  '| rows | ONNX Runtime (ms) | svc kernel (ms) | × faster | difference |',
  '|---:|---:|---:|---:|---:|',
  ...mlps.map((r) => `| ${r.rows} | ${f(r.ort)} | ${f(r.svc)} | ${f(r.ort / r.svc)} | ${r.err.toExponential(1)} |`),
  '',
  `Decoding (\`generate.ts --batch-child\`: greedy, EOS masked, 32 tokens a stream; one stream, then 4 at once) in processes that alternate SVC_NATIVE_KERNELS=0, where ONNX Runtime runs the whole graph, and svc's kernels (at any thread count, every 4- or 8-bit product and the sums and norms between them, the graph cut into a stage a layer, its attention, which the kernel also runs in a decode step for every layer but the first; greedy steps run ahead in the inference thread on both sides); medians of ${RUNS} processes, each the median of 3 rounds:`,
  '',
  '| file | threads | kernels | 1 stream (tok/s) | 4 streams aggregate (tok/s) | × one stream | decode step, 1 row / 4 rows (ms) |',
  '|---|---:|---|---:|---:|---:|---:|',
  ...decode.flatMap((d) =>
    (['ort', 'svc'] as const).map((side) => {
      const r = d[side];
      return `| ${d.dtype} | ${d.threads} | ${side === 'ort' ? 'ONNX Runtime alone' : 'svc'} | ${f(r.oneTps, 1)} | ${f(r.fourTps, 1)} | ${
        f(r.fourTps / r.oneTps)
      } | ${f(r.stepOne, 1)} / ${f(r.stepFour, 1)} |`;
    })
  ),
].join('\n');
console.log(body);
writeSection("Text generation: svc's own kernels (LM head, 4-bit MLPs)", body);
