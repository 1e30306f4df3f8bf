/**
 * WASM against native decode: the same Qwen2.5-0.5B-shaped weights (scripts/bench/generate.ts' model, q8
 * and q4) on onnxruntime-web (WASM, its sessions in their own thread, as the server runs them) and on
 * onnxruntime-node, with the same intra-op threads, greedy, EOS masked so every run decodes the same
 * number of tokens. Each side runs in its own long-lived child process (transformers.js binds one ONNX
 * Runtime per process); the parent asks them for a generation in turn (native, WASM, native, …) after
 * one warm-up each, so both sides meet the same machine; medians of the runs.
 *
 * Run: node --import tsx scripts/bench/generate-wasm.ts     (writes the "Text generation: WASM against
 * native" section of BENCHMARKS.md). BENCH_TOKENS=32 BENCH_RUNS=5 BENCH_DTYPES=q8,q4 BENCH_THREADS=1,2.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FILE, KERNELS, loadMasked, median, MODEL_DIR, section } from './generate.ts';

const TOKENS = Number(process.env.BENCH_TOKENS ?? 32);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const DTYPES = (process.env.BENCH_DTYPES ?? 'q8,q4').split(',');
const THREADS = (process.env.BENCH_THREADS ?? '1,2').split(',').map(Number);
/** Runtimes the WASM side also runs on (native is always Node's onnxruntime-node), for these dtypes. */
const WASM_RUNTIMES = (process.env.BENCH_WASM_RUNTIMES ?? 'node,deno,bun').split(',');
const OTHER_RUNTIME_DTYPES = (process.env.BENCH_OTHER_RUNTIME_DTYPES ?? 'q8,q4').split(',');
const CHILD: Record<string, string[]> = {
  node: [process.execPath, '--import', 'tsx'],
  deno: ['node_modules/.bin/deno', 'run', '-A'],
  bun: ['node_modules/.bin/bun', 'run'],
};

interface Run {
  ttft: number;
  tps: number;
  /** process CPU time / wall time of the run, all threads together */
  cpu: number;
  text: string;
}

/** CPU time of this process, all threads (Linux; the same reading on every runtime, unlike process.cpuUsage). */
const cpuSeconds = () => {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in USER_HZ (100 on Linux)
};

// ---------------------------------------------------------------- child: one backend, kept loaded
async function serve(backend: 'cpu' | 'wasm', dtype: string, threads: number) {
  const { m, generate } = await loadMasked(backend, dtype, threads);
  const run = async (maxTokens: number): Promise<Run> => {
    const c0 = cpuSeconds(), t0 = performance.now();
    const { r, ttft, tps } = await generate(maxTokens);
    return { ttft, tps, cpu: (cpuSeconds() - c0) * 1000 / (performance.now() - t0), text: r.text };
  };
  await run(2); // warm-up: first-run allocations and kernel selection
  const session = (m.model as unknown as { sessions: { model: { edits?: { int8From4Bit: number; mlpsOwnKernel: number } } } }).sessions
    .model;
  const say = (tag: string, v: unknown) => process.stdout.write(`@@${tag} ${JSON.stringify(v)}\n`);
  const edits = session.edits;
  say('READY', {
    device: m.device,
    ort: m.ort,
    loadMs: m.loadNs / 1e6,
    int8From4Bit: edits?.int8From4Bit ?? 0,
    ownMlps: edits?.mlpsOwnKernel ?? 0,
  });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'run') say('RUN', await run(TOKENS));
    else break;
  }
  await m.dispose();
  process.exit(0);
}

// ---------------------------------------------------------------- parent
interface Side {
  proc: ChildProcessWithoutNullStreams;
  next(tag: string): Promise<Record<string, unknown>>;
}

function startSide(backend: string, dtype: string, threads: number, runtime = 'node'): Side {
  const [cmd, ...pre] = CHILD[runtime]!;
  const proc = spawn(cmd!, [...pre, 'scripts/bench/generate-wasm.ts', '--serve', backend, dtype, String(threads)], {
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
  });
  const waiting: ((l: string) => void)[] = [];
  let err = '';
  proc.stderr.on('data', (d) => (err = (err + d).slice(-2000)));
  createInterface({ input: proc.stdout }).on('line', (l) => l.startsWith('@@') && waiting.shift()?.(l));
  return {
    proc,
    next: (tag) =>
      new Promise((resolve, reject) => {
        proc.once('exit', (code) =>
          reject(new Error(`${backend} ${dtype} child exited (${code}): ${err.trim().split('\n').slice(-3).join(' / ')}`)));
        waiting.push((l) => {
          const [t, ...rest] = l.slice(2).split(' ');
          if (t === tag) {
            resolve(JSON.parse(rest.join(' ')));
          } else reject(new Error(`expected ${tag}, got ${l}`));
        });
      }),
  };
}

async function pair(dtype: string, threads: number, runtime: string) {
  const native = startSide('cpu', dtype, threads);
  const nativeInfo = await native.next('READY'); // loaded one after the other: loading is heavy
  const wasm = startSide('wasm', dtype, threads, runtime);
  const wasmInfo = await wasm.next('READY');
  const runs = { native: [] as Run[], wasm: [] as Run[] };
  try {
    for (let i = 0; i < RUNS; i++) {
      for (const [name, side] of [['native', native], ['wasm', wasm]] as const) {
        const r = side.next('RUN');
        side.proc.stdin.write('run\n');
        runs[name].push((await r) as unknown as Run);
      }
    }
  } finally {
    for (const s of [native, wasm]) s.proc.stdin.end('quit\n');
  }
  const agg = (xs: Run[]) => ({
    ttft: median(xs.map((x) => x.ttft)),
    tps: median(xs.map((x) => x.tps)),
    cpu: median(xs.map((x) => x.cpu)),
  });
  return {
    dtype,
    threads,
    runtime,
    nativeInfo,
    wasmInfo,
    native: agg(runs.native),
    wasm: agg(runs.wasm),
    sameText: runs.native[0]!.text === runs.wasm[0]!.text,
  };
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function main() {
  if (process.argv[2] === '--serve') return serve(process.argv[3] as 'cpu' | 'wasm', process.argv[4]!, Number(process.argv[5]));
  for (const d of DTYPES) {
    if (!existsSync(join(MODEL_DIR, 'onnx', FILE[d]!))) throw new Error(`no ${FILE[d]} in ${MODEL_DIR}: see scripts/bench/generate.ts`);
  }
  const loads = [load()];
  console.error(`load average at start: ${loads[0]}`);
  const rows: string[] = [];
  const results: { dtype: string; threads: number; runtime: string; share: number }[] = [];
  const combos = WASM_RUNTIMES.flatMap((runtime) =>
    DTYPES.filter((d) => runtime === 'node' || OTHER_RUNTIME_DTYPES.includes(d)).flatMap((dtype) =>
      THREADS.map((threads) => ({ runtime, dtype, threads }))
    )
  );
  for (const { runtime, dtype, threads } of combos) {
    console.error(`${dtype} threads=${threads}: native and WASM (${runtime}), alternating ...`);
    const r = await pair(dtype, threads, runtime).catch((e) => ({ dtype, threads, error: String(e?.message ?? e).split('\n')[0] }));
    loads.push(load());
    console.error(JSON.stringify(r));
    if ('error' in r) {
      rows.push(`| ${dtype} | ${threads} | ${runtime} | failed: ${r.error!.replace(/\|/g, '/')} | | | | | | |`);
      continue;
    }
    const converted = Number(r.wasmInfo.int8From4Bit), own = Number(r.wasmInfo.ownMlps);
    results.push({ dtype, threads, runtime, share: r.wasm.tps / r.native.tps });
    rows.push(
      `| ${dtype} | ${threads} | ${runtime} | ${f1(r.native.tps)} | ${f1(r.wasm.tps)} | **${
        (100 * r.wasm.tps / r.native.tps).toFixed(1)
      } %** | ${f1(r.native.ttft)} | ${f1(r.wasm.ttft)} | ${r.native.cpu.toFixed(2)} / ${r.wasm.cpu.toFixed(2)} | ${
        (Number(r.wasmInfo.loadMs) / 1000).toFixed(1)
      } s${own ? `; products on svc's WASM kernels (${own} MLPs)` : ''}${converted ? `; ${converted} 4-bit weights run as int8` : ''}${
        r.sameText ? '' : '; greedy text differs'
      } |`,
    );
  }
  const body = [
    `Same weights on both sides: ${
      DTYPES.map((d) => `\`onnx/${FILE[d]}\``).join(' and ')
    } of the Qwen2.5-0.5B-shaped random model of "Text generation" above. Native = onnxruntime-node on Node; WASM = onnxruntime-web on the runtime listed (SIMD build, its sessions in their own thread as the server runs them: src/services/inference/ort-thread.ts; a decoder cut for svc's WASM kernels, as both files are here, has an inference thread of its own whose onnxruntime-web runs on one thread, the threads listed being the kernels'). The same chat prompt, greedy, EOS masked, ${TOKENS} tokens per run; each side in its own process, loaded once, runs alternating native, WASM, native, … after one warm-up each; medians of ${RUNS} runs per side. Machine: ${cpus().length} × ${
      cpus()[0]?.model ?? 'CPU'
    }, Node ${process.version}; load average at start and after each pair: ${loads.join('; ')}.`,
    '',
    '| dtype | threads | WASM on | native decode (tok/s) | WASM decode (tok/s) | WASM / native | native TTFT (ms) | WASM TTFT (ms) | CPU share native / WASM (cores) | WASM load, notes |',
    '|---|---:|---|---:|---:|---:|---:|---:|---|---|',
    ...rows,
    '',
    "On WASM a decoder is cut as natively (src/services/inference/weight-split.ts): its 4- and 8-bit products, MLPs, residual sums, norms and each decode step's attention run on svc's WASM kernels (native/kernels/wasm.c, compiled to native/kernels/svc_kernels.wasm, 128-bit SIMD, and svc_kernels_relaxed.wasm, taken where the engine has relaxed SIMD: Deno, Bun and Node 20 (behind V8's flag, which svc sets) here, its 4-bit dot products as pairs on Bun and Node 20 and, on Deno, in whichever form was faster when the kernels loaded (src/runtime/wasm-kernels.ts); on the threads listed, with worker threads over a shared memory: native/kernels/wasm-pool.c; src/services/inference/split-session.ts runs the stages left on onnxruntime-web). ONNX Runtime's own WASM int8 kernel widens and repacks every weight on every call (\"Text generation: WASM against native, per operator\" below), and it has no 4-bit kernel at all (4-bit weights ran as int8 there). WebAssembly's 128-bit SIMD has no dot product of bytes: the kernels widen weights to 16 bits (i32x4.dot_i16x8_s), and a 4-bit code needs unpacking first (relaxed SIMD's byte dot product takes the codes as they are), so q4 is compute-bound there while natively it reads its weights at the memory rate (" +
    (KERNELS === 'avx2' ? 'AVX2 here: its byte product, vpmaddubsw' : 'AVX-512 VNNI') +
    "); q8 reads its weights as one stream per 4 columns, near the memory rate. The native side runs the same cut on the addon's kernels (its threads). \"Greedy text differs\": the WASM kernels' float steps are not fused (plain SIMD has no fused multiply-add) and this random model's nearly flat logits flip on such rounding within a few tokens; on the fixtures the split session on WASM gives ONNX Runtime's logits (test/services/inference/weight-split.test.ts).",
    '',
    `Goal: WASM ≥ 60 % of native. Status of this run: ${
      results.map((x) => `${x.dtype} ${x.threads}T on ${x.runtime} ${x.share >= 0.6 ? 'met' : '**not met**'}`).join('; ') || 'no rows'
    }.`,
  ].join('\n');
  const { writeSection } = (await import('./write-benchmarks.mjs')) as { writeSection: (title: string, body: string) => void };
  writeSection(section('Text generation: WASM against native (same weights, same threads)'), body);
  console.log(body);
}

await main();
