/**
 * Text-generation benchmark: decode tokens/s and time to first token per available backend, on a model of
 * Qwen2.5-0.5B's shape with random weights (q8 and q4), against this machine's physical limit:
 * measured memory bandwidth / bytes read per decoded token (every weight a MatMul reads, one embedding
 * row, the KV cache at the mean context length).
 *
 * Run: node --import tsx scripts/bench/generate.ts        (writes the "Text generation" section of BENCHMARKS.md)
 *   BENCH_TOKENS=32 BENCH_RUNS=5 BENCH_BACKENDS=cpu,wasm BENCH_DTYPES=q8,q4 BENCH_THREADS=1,2 to change the defaults;
 *   BENCH_PARTS (default pair,batch,http; also loop, long, hub, table) picks the sections.
 * The model is generated once into .models-cache/qwen2.5-0.5b (git-ignored) by
 *   /usr/bin/python3 scripts/models/gen-tiny-models.py --shape qwen2.5-0.5b .models-cache/qwen2.5-0.5b
 * Each backend runs in its own child process: transformers.js binds one ONNX Runtime per process.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { all, decodeFields, first, int64s, ONNX, str } from '../../src/services/models/onnx-wire.ts';
import { PREFILL_CHUNK, PREFILL_CHUNK_ALONE } from '../../src/services/inference/batch-decoder.ts';
import { suppressTokens } from '../../src/services/inference/sampling.ts';
import { nativeKernels } from '../../src/runtime/kernels.ts';

export const MODEL_DIR = resolve(process.env.BENCH_MODEL_DIR ?? '.models-cache/qwen2.5-0.5b');
const TOKENS = Number(process.env.BENCH_TOKENS ?? 32);
/** Measured generations per backend after the warm-up; the table shows their medians. */
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** Intra-op thread counts tried on the native CPU backend (WASM runs single-threaded, as the server does). */
const THREADS = (process.env.BENCH_THREADS ?? '1,2').split(',').map(Number);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'cpu,wasm').split(',');
const DTYPES = (process.env.BENCH_DTYPES ?? 'q8,q4').split(',');
export const FILE: Record<string, string> = { q8: 'model_quantized.onnx', q4: 'model_q4.onnx', fp32: 'model.onnx' };
export const PROMPT = 'Write a short story about a lighthouse keeper who finds a message in a bottle on a stormy night.';
/** The long prompt of the "after a long prompt" pair: the chat prompt's sentence repeated (about 2,000 tokens). */
const LONG_PROMPT = Array(Number(process.env.BENCH_LONG_REPEAT ?? 30)).fill(PROMPT).join(' ');

interface ChildResult {
  backend: string;
  dtype: string;
  threads: number;
  device?: string;
  ort?: string;
  loadMs?: number;
  promptTokens?: number;
  ttftMs?: number;
  decodeTps?: number;
  tokens?: number;
  error?: string;
}

/** Sampling settings of a generation (greedy when absent). */
interface Sampling {
  temperature: number;
  topP?: number;
  topK?: number;
  seed?: number;
}
/** The sampled rounds of the batching benchmark: no top-k, so every token weighs the whole vocabulary. */
const SAMPLED: Sampling = { temperature: 1, topP: 0.9 };

/**
 * A logits processor that never lets `ids` be picked: svc's own, which says so as data, so greedy steps still run
 * ahead in the inference thread as they do for any greedy request (src/services/inference/batch-decoder.ts).
 */
export const maskTokens = (ids: number[]) => suppressTokens(ids);

/**
 * The benchmark model loaded on one backend, and a greedy generation of the chat prompt with EOS masked (a
 * random model may pick EOS at any step: masked, every run decodes exactly the tokens asked for), drained;
 * its result with time to first token (ms) and decode tokens/s (the first token excluded).
 */
export async function loadMasked(backend: string, dtype: string, threads: number, dir = MODEL_DIR) {
  const { loadModel } = await import('../../src/services/inference/load.ts');
  const { generateText } = await import('../../src/services/inference/generate.ts');
  const m = await loadModel(dir, 'text-generation', { backend: backend as never, dtype: dtype as never, threads });
  const noEos = maskTokens([m.model.generation_config?.eos_token_id ?? [], m.config.eos_token_id ?? []].flat().map(Number));
  const generate = async (maxTokens: number, o: { batching?: boolean; content?: string; sampling?: Sampling } = {}) => {
    const g = generateText(m, { messages: [{ role: 'user', content: o.content ?? PROMPT }] }, {
      maxTokens,
      temperature: 0,
      ...o.sampling,
      batching: o.batching,
      logitsProcessors: [noEos as never],
    });
    for await (const _ of g) { /* drain */ }
    const r = await g.result;
    return { r, ttft: r.timings.promptEvalNs / 1e6, tps: (r.completionTokens - 1) / (r.timings.evalNs / 1e9) };
  };
  return { m, generate };
}

// ---------------------------------------------------------------- child: one backend, one dtype
async function child(backend: string, dtype: string, threads: number): Promise<ChildResult> {
  const { m, generate } = await loadMasked(backend, dtype, threads);
  await generate(2); // warm-up: first-run allocations and kernel selection
  const ttft: number[] = [], tps: number[] = [];
  let r!: Awaited<ReturnType<typeof generate>>['r'];
  for (let i = 0; i < RUNS; i++) {
    const g = await generate(TOKENS);
    r = g.r;
    ttft.push(g.ttft);
    tps.push(g.tps);
  }
  await m.dispose();
  return {
    backend,
    dtype,
    threads,
    device: m.device,
    ort: m.ort,
    loadMs: m.loadNs / 1e6,
    promptTokens: r.promptTokens,
    ttftMs: median(ttft),
    tokens: r.completionTokens,
    decodeTps: median(tps),
  };
}

// ---------------------------------------------------------------- child: svc against llama.cpp, alternating
const GGUF: Record<string, string> = { q8: 'llama-q8_0.gguf', q4: 'llama-q4_0.gguf' };
interface PairResult {
  dtype: string;
  threads: number;
  svc: { ttft: number; tps: number; cpu: number[] };
  llama: { ttft: number; tps: number; cpu: number[] };
  promptTokens: number;
  error?: string;
}

/**
 * Both engines in one process (two native addons side by side), the same prompt token ids, greedy, the
 * same number of decoded tokens; runs alternate svc, llama.cpp, svc, … so foreign load hits both alike.
 * `cpu` is each run's process CPU time / wall time over the threads asked for: well below 1 means the
 * run waited for cores other work held.
 */
async function pairChild(dtype: string, threads: number, content = PROMPT, svcDir = MODEL_DIR): Promise<PairResult> {
  const { renderChatPrompt } = await import('../../src/services/inference/chat-prompt.ts');
  const { m, generate } = await loadMasked('cpu', dtype, threads, svcDir);
  const chat = { messages: [{ role: 'user', content }] };
  const ids = Array.from(
    (m.tokenizer(renderChatPrompt(m.tokenizer, chat), { add_special_tokens: false }) as unknown as { input_ids: { data: BigInt64Array } })
      .input_ids.data,
    Number,
  );
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  const lm = await llama.loadModel({ modelPath: join(MODEL_DIR, GGUF[dtype]!) });
  const ctx = await lm.createContext({ contextSize: Math.max(512, ids.length + TOKENS + 8), batchSize: 512, threads, sequences: 1 });
  const seq = ctx.getSequence();
  const cpuShare = (t0: number, c0: NodeJS.CpuUsage) => {
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000 / (performance.now() - t0) / threads;
  };
  const runSvc = async (n: number) => {
    const t0 = performance.now(), c0 = process.cpuUsage();
    const { ttft, tps } = await generate(n, { content });
    return { ttft, tps, cpu: cpuShare(t0, c0) };
  };
  const runLlama = async (n: number) => {
    await seq.clearHistory();
    const t0 = performance.now(), c0 = process.cpuUsage();
    let first = 0, got = 0;
    // the generator keeps decoding past an end-of-generation token: every run decodes n tokens
    for await (const _ of seq.evaluate(ids as never, { temperature: 0 })) {
      if (!first) first = performance.now();
      if (++got >= n) break;
    }
    const end = performance.now();
    return { ttft: first - t0, tps: (got - 1) / ((end - first) / 1000), cpu: cpuShare(t0, c0) };
  };
  await runSvc(2);
  await runLlama(2);
  const sv: Awaited<ReturnType<typeof runSvc>>[] = [], ll: typeof sv = [];
  for (let i = 0; i < RUNS; i++) {
    sv.push(await runSvc(TOKENS));
    ll.push(await runLlama(TOKENS));
  }
  await ctx.dispose();
  await lm.dispose();
  await m.dispose();
  const agg = (xs: typeof sv) => ({
    ttft: median(xs.map((x) => x.ttft)),
    tps: median(xs.map((x) => x.tps)),
    cpu: xs.map((x) => Number(x.cpu.toFixed(2))),
  });
  return { dtype, threads, svc: agg(sv), llama: agg(ll), promptTokens: ids.length };
}

/** The svc / llama.cpp table of some pairs. */
const pairTable = (pairs: PairResult[], first = 'dtype') => [
  `| ${first} | threads | svc TTFT (ms) | svc decode (tok/s) | llama.cpp TTFT (ms) | llama.cpp decode (tok/s) | svc / llama.cpp decode | cpu share svc | cpu share llama.cpp |`,
  '|---|---:|---:|---:|---:|---:|---:|---|---|',
  ...pairs.map((r) =>
    r.error
      ? `| ${r.dtype} | ${r.threads} | – | – | – | – | – | failed: ${r.error.replace(/\|/g, '/')} | |`
      : `| ${r.dtype} | ${r.threads} | ${f1(r.svc.ttft)} | ${f1(r.svc.tps)} | ${f1(r.llama.ttft)} | ${f1(r.llama.tps)} | ${
        (r.svc.tps / r.llama.tps).toFixed(2)
      } | ${r.svc.cpu.join(' ')} | ${r.llama.cpu.join(' ')} |`
  ),
];

/** The run's verdict on the two goals, from its own figures. */
function pairStatus(pairs: PairResult[]): string {
  const ok = pairs.filter((p) => !p.error);
  const ratio = (t: number) => {
    const [a, b] = ['q4', 'q8'].map((d) => ok.find((p) => p.dtype === d && p.threads === t)?.svc.tps);
    return a && b ? a / b : undefined;
  };
  const q4 = THREADS.map((t) => [t, ratio(t)] as const).filter(([, r]) => r !== undefined);
  const q4Met = q4.filter(([, r]) => r! >= 1.4).map(([t]) => t);
  // a row where either engine did not keep its cores busy (cpu share under 0.9) does not count either way
  const busy = (xs: number[]) => median(xs) >= 0.9;
  const judged = ok.filter((p) => busy(p.svc.cpu) && busy(p.llama.cpu));
  const llamaMet = judged.filter((p) => p.svc.tps / p.llama.tps >= 1.2);
  const unjudged = ok.length - judged.length;
  return `**Status of this run:** q4 ≥ 1.4× q8 ${
    q4Met.length === q4.length ? 'met' : q4Met.length ? `met at ${q4Met.join(', ')} thread(s) only` : '**not met**'
  }; svc ≥ 1.2× llama.cpp ${
    !judged.length
      ? 'not judged'
      : llamaMet.length === judged.length
      ? 'met'
      : `**not met** in ${judged.length - llamaMet.length} of ${judged.length} rows`
  }${
    unjudged
      ? ` (${unjudged} row(s) not judged: an engine's median cpu share was under 0.9, so it did not have its cores to itself, and its figure varies from run to run)`
      : ''
  }. ${
    llamaMet.length === judged.length
      ? ''
      : "What limits it: with q4, every 4-bit product (the MLPs, the attention's projections, the LM head), the residual sums and norms between them and every layer's attention but the first run on svc's own kernels (src/services/inference/weight-split.ts, src/services/inference/attention-stage.ts; \"svc's own kernels\" below), at 1 and 2 threads, so a decode step is mostly its weights read at this machine's memory rate (which varied from run to run: see the bandwidth in \"Text generation\"), and greedy steps run 4 at a time in the inference thread. With q8 the same, its products on svc's 8-bit kernels" +
        (KERNELS === 'avx2'
          ? "; here, on x64 without VNNI, the kernels' AVX2 path (native/kernels/avx2.c) runs them, and its 8-bit products of a prompt's rows are slower than ONNX Runtime's int8 GEMM (q8's time to first token)"
          : OWN
          ? ''
          : '; without the kernels ONNX Runtime runs the whole graph, whose int8 products are compute-bound there') +
        '.'
  }`;
}

// ---------------------------------------------------------------- child: decode loop, before/after
/** transformers.js' generate (batching: false, the loop before) against svc's own decode loop, alternating. */
async function loopChild(dtype: string, threads: number) {
  const { m, generate } = await loadMasked('cpu', dtype, threads);
  const run = async (batching: boolean, n: number) => {
    const { r, ttft, tps } = await generate(n, { batching });
    return { ttft, tps, text: r.text };
  };
  await run(false, 2);
  await run(true, 2);
  const before: Awaited<ReturnType<typeof run>>[] = [], after: typeof before = [];
  for (let i = 0; i < RUNS; i++) {
    before.push(await run(false, TOKENS));
    after.push(await run(true, TOKENS));
  }
  await m.dispose();
  return {
    dtype,
    threads,
    sameText: before.every((b, i) => b.text === after[i]!.text),
    before: { ttft: median(before.map((x) => x.ttft)), tps: median(before.map((x) => x.tps)) },
    after: { ttft: median(after.map((x) => x.ttft)), tps: median(after.map((x) => x.tps)) },
  };
}

// ---------------------------------------------------------------- child: continuous batching
interface BatchResult {
  dtype: string;
  threads: number;
  /** Decode tokens/s of one stream alone, and summed over 4 concurrent streams. */
  oneTps: number;
  fourTps: number;
  /** Time to first token alone; of a request arriving while 3 others decode; worst of 4 started at once. */
  ttftAlone: number;
  ttftJoin: number;
  ttftBurst: number;
  /** Median session call of a decode step with 1 row (streams alone) and with 4 rows (4 streams at once). */
  stepOne: number;
  stepFour: number;
  /** One stream alone and 4 at once (aggregate), sampling with SAMPLED. */
  sampledOneTps: number;
  sampledFourTps: number;
  error?: string;
}

async function batchChild(dtype: string, threads: number): Promise<BatchResult> {
  const { m, generate } = await loadMasked('cpu', dtype, threads);
  // the session's decode calls (one new token per row), timed by batch size: what a step of 4 rows costs against 1
  const s =
    (m.model as unknown as { sessions: { model: { run: (f: Record<string, { dims: number[] }>, ...r: unknown[]) => Promise<unknown> } } })
      .sessions.model;
  const steps = new Map<number, number[]>();
  // greedy rounds only: a sampled step run ahead includes its draw, which the step column is not about
  let timing = true;
  const timed =
    <A extends unknown[], R>(run: (f: Record<string, { dims: number[] }>, ...rest: A) => Promise<R>) =>
    async (f: Record<string, { dims: number[] }>, ...rest: A): Promise<R> => {
      const t = performance.now();
      const out = await run(f, ...rest);
      const [rows, q] = f.input_ids!.dims;
      if (q === 1 && timing) steps.set(rows!, [...(steps.get(rows!) ?? []), performance.now() - t]);
      return out;
    };
  s.run = timed(s.run.bind(s));
  // a session in the inference thread: the decoder runs it on buffers held there (src/services/inference/ort-thread.ts)
  const held = s as unknown as { runHeld?: typeof s.run; decodeHeld?: (plan: { pads: number[] }) => Promise<{ tokens: Int32Array }> };
  if (held.runHeld) held.runHeld = timed(held.runHeld.bind(s));
  // steps run ahead in the inference thread, several a call: each step counts its share of the call
  const ahead = held.decodeHeld?.bind(s);
  if (ahead) {
    held.decodeHeld = async (plan) => {
      const t = performance.now();
      const decoded = await ahead(plan);
      const rows = plan.pads.length, n = decoded.tokens.length / rows;
      for (let k = 0; k < n && timing; k++) steps.set(rows, [...(steps.get(rows) ?? []), (performance.now() - t) / n]);
      return decoded;
    };
  }
  /**
   * One stream: time to its first token and of its last token, from the engine's own token timings (a
   * random model's first tokens may be partial UTF-8 that emit no text yet).
   */
  const stream = async (maxTokens: number, content = PROMPT, sampling?: Sampling) => {
    const t0 = performance.now();
    const { r, ttft } = await generate(maxTokens, { content, sampling });
    return { t0, ttft, end: t0 + ttft + r.timings.evalNs / 1e6, tokens: r.completionTokens };
  };
  await stream(2);
  const one: number[] = [], four: number[] = [], alone: number[] = [], join: number[] = [], burst: number[] = [];
  const sampledOne: number[] = [], sampledFour: number[] = [];
  /** 4 at once: aggregate decode rate over the span where all 4 decode (after the last first token). */
  const aggregate = (b: Awaited<ReturnType<typeof stream>>[]) => {
    const start = Math.max(...b.map((x) => x.t0 + x.ttft));
    const end = Math.min(...b.map((x) => x.end));
    const shared = b.reduce((n, x) => n + (x.tokens - 1) * Math.max(0, (end - start) / (x.end - x.t0 - x.ttft)), 0);
    return shared / ((end - start) / 1000);
  };
  const tps = (a: Awaited<ReturnType<typeof stream>>) => (a.tokens - 1) / ((a.end - a.t0 - a.ttft) / 1000);
  for (let i = 0; i < RUNS; i++) {
    const a = await stream(TOKENS);
    alone.push(a.ttft);
    one.push(tps(a));
    const b = await Promise.all([0, 1, 2, 3].map(() => stream(TOKENS)));
    burst.push(Math.max(...b.map((x) => x.ttft)));
    four.push(aggregate(b));
    timing = false;
    sampledOne.push(tps(await stream(TOKENS, PROMPT, { ...SAMPLED, seed: i })));
    sampledFour.push(aggregate(await Promise.all([0, 1, 2, 3].map((j) => stream(TOKENS, PROMPT, { ...SAMPLED, seed: 10 * i + j })))));
    timing = true;
    // a fourth request joining 3 that decode
    const bg = [0, 1, 2].map(() => stream(TOKENS * 2));
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setTimeout(r, (a.ttft * 3) + 200));
    join.push((await stream(4)).ttft); // the same prompt as alone: equal prefill work
    await Promise.all(bg);
  }
  await m.dispose();
  return {
    dtype,
    threads,
    oneTps: median(one),
    fourTps: median(four),
    ttftAlone: median(alone),
    ttftJoin: median(join),
    ttftBurst: median(burst),
    stepOne: median(steps.get(1) ?? [NaN]),
    stepFour: median(steps.get(4) ?? [NaN]),
    sampledOneTps: median(sampledOne),
    sampledFourTps: median(sampledFour),
  };
}

// ---------------------------------------------------------------- child: HTTP against the engine called directly
interface HttpResult {
  dtype: string;
  threads: number;
  direct: { ttft: number; tps: number };
  http: { ttft: number; tps: number };
  error?: string;
}

/**
 * The files a server downloads for `dtype`, as hard links in a directory of their own: the hub stand-in
 * reads each file it serves whole, and the fp32 export's external data (2.5 GB) is past what one read takes.
 */
function servedCopy(dtype: string): string {
  const dir = `${MODEL_DIR}-served`;
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', `onnx/${FILE[dtype]}`]) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    if (!existsSync(join(dir, f))) linkSync(join(MODEL_DIR, f), join(dir, f));
  }
  return dir;
}

/**
 * The bench model's q4 graph as the hub's q4 files are made (transformers.js' quantizer: MatMulNBits without
 * `accuracy_level`), and with the level 1 (fp32 activations, which ONNX Runtime also runs for an unset level),
 * each in a model directory of its own beside the other files (hard links), edited by the `onnx` package.
 */
function hubCopies(): Record<'unset' | 'level1', string> {
  const dirs = { unset: `${MODEL_DIR}-hub-unset`, level1: `${MODEL_DIR}-hub-level1` };
  for (const dir of Object.values(dirs)) {
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) {
      if (!existsSync(join(dir, f))) linkSync(join(MODEL_DIR, f), join(dir, f));
    }
  }
  const out = (d: string) => join(d, 'onnx', FILE.q4!);
  for (const [which, level] of [['unset', 'unset'], ['level1', '1']] as const) {
    if (existsSync(out(dirs[which]))) continue;
    const r = spawnSync('/usr/bin/python3', [
      'scripts/models/nbits-accuracy-level.py',
      join(MODEL_DIR, 'onnx', FILE.q4!),
      out(dirs[which]),
      level,
    ], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (r.status !== 0) throw new Error('editing the q4 graph with onnx failed');
  }
  return dirs;
}

/**
 * The same server instance and model: a streamed chat completion through HTTP by the official openai
 * client in its own process (as a real caller), against the engine called in the server's process;
 * alternating runs. Both sides time the first text delta and the last one the same way.
 */
async function httpChild(dtype: string, threads: number): Promise<HttpResult> {
  const { HubStandIn, FIXTURE_CATALOG } = await import('../../test/support/hub-stand-in.ts');
  const { listening } = await import('../../test/support/server.ts');
  const { createInterface } = await import('node:readline');
  const { spawn } = await import('node:child_process');
  const hub = await HubStandIn.start({ 'svc-bench/model': servedCopy(dtype) });
  const srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'], backend: 'cpu', threads } as never);
  const name = `bench-qwen:${dtype}`;
  srv.models.catalog.register({ ...FIXTURE_CATALOG[0]!, name, aliases: [], repo: 'svc-bench/model', dtype: dtype as never });
  const noEos = maskTokens(
    [JSON.parse(readFileSync(join(MODEL_DIR, 'generation_config.json'), 'utf8')).eos_token_id ?? []].flat().map(Number),
  );
  // EOS masked on both paths: every run decodes the same number of tokens
  const generate = srv.engine.generate.bind(srv.engine);
  srv.engine.generate = (spec, input, o = {}) => generate(spec, input, { ...o, logitsProcessors: [...(o.logitsProcessors ?? []), noEos] });
  const messages = [{ role: 'user' as const, content: 'Write a short story about a lighthouse keeper.' }]; // the client's prompt
  const m = await srv.chat.resolve(name, 'generation');
  const direct = async () => {
    const t0 = performance.now();
    let first = 0;
    const g = await srv.engine.generate(m.engineSpec, { messages }, { ...m.defaults, maxTokens: TOKENS, temperature: 0 });
    for await (const _ of g) if (!first) first = performance.now();
    const r = await g.result;
    const end = performance.now();
    return { ttft: first - t0, tps: ((r.completionTokens - 1) * 1000) / (end - first) };
  };
  const client = spawn(process.execPath, [join('scripts', 'bench', 'openai-client.mjs'), `${srv.url}/v1`, name, String(TOKENS)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: client.stdout! })[Symbol.asyncIterator]();
  const http = async (): Promise<{ ttft: number; tps: number }> => {
    client.stdin!.write('go\n');
    return JSON.parse(String((await lines.next()).value));
  };
  await direct();
  await http();
  const d: { ttft: number; tps: number }[] = [], h: typeof d = [];
  for (let i = 0; i < RUNS; i++) {
    d.push(await direct());
    h.push(await http());
  }
  client.stdin!.end();
  await srv.stop();
  await hub.close();
  const agg = (xs: typeof d) => ({ ttft: median(xs.map((x) => x.ttft)), tps: median(xs.map((x) => x.tps)) });
  return { dtype, threads, direct: agg(d), http: agg(h) };
}

// ---------------------------------------------------------------- bytes read per decoded token
/**
 * Initializer bytes every decode step reads: all of them, except tables only Gathered (one row each). Data
 * kept in an external file counts by its recorded length.
 */
export function bytesPerToken(file: string): { weights: number; gathered: number } {
  const buf = readFileSync(file);
  const graph = decodeFields(first(decodeFields(buf), ONNX.model.graph)!.bytes!);
  const consumers = new Map<string, string[]>();
  for (const n of all(graph, ONNX.graph.node)) {
    const nf = decodeFields(n.bytes!);
    const op = str(first(nf, ONNX.node.opType)?.bytes);
    all(nf, ONNX.node.input).forEach((f, k) => {
      const name = str(f.bytes);
      consumers.set(name, [...(consumers.get(name) ?? []), `${op}#${k}`]);
    });
  }
  let weights = 0;
  let gathered = 0;
  for (const t of all(graph, ONNX.graph.initializer)) {
    const tf = decodeFields(t.bytes!);
    const name = str(first(tf, ONNX.tensor.name)?.bytes);
    const external = all(tf, ONNX.tensor.externalData).map((f) => decodeFields(f.bytes!))
      .find((e) => str(first(e, ONNX.entry.key)?.bytes) === 'length');
    const bytes = external ? Number(str(first(external, ONNX.entry.value)?.bytes)) : first(tf, ONNX.tensor.rawData)?.bytes?.length ?? 0;
    const dims = int64s(tf, ONNX.tensor.dims);
    const uses = consumers.get(name) ?? [];
    if (uses.length && uses.every((u) => u.startsWith('Gather') && u.endsWith('#0')) && dims.length >= 2) {
      gathered += bytes;
      weights += bytes / dims[0]; // one row per token
    } else weights += bytes;
  }
  return { weights, gathered };
}

/** Bytes of the fp32 KV cache one decode step reads at `contextTokens` positions. */
export function kvBytesPerToken(contextTokens: number, dir = MODEL_DIR): number {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  const headDim = c.head_dim ?? c.hidden_size / c.num_attention_heads;
  return c.num_hidden_layers * 2 * c.num_key_value_heads * headDim * 4 * contextTokens; // fp32 cache
}

// ---------------------------------------------------------------- memory bandwidth
/** STREAM-style copy bandwidth ((read + write) / time) with `threads` workers copying 256 MiB each. */
async function copyBandwidth(threads: number): Promise<number> {
  const code = `
    const { parentPort } = require('node:worker_threads');
    const n = 32 * 1024 * 1024; // 256 MiB of float64
    const a = new Float64Array(n).fill(1), b = new Float64Array(n);
    parentPort.on('message', (reps) => {
      b.set(a);
      const t = process.hrtime.bigint();
      for (let i = 0; i < reps; i++) (i & 1 ? a : b).set(i & 1 ? b : a);
      parentPort.postMessage({ bytes: 2 * 8 * n * reps, ns: Number(process.hrtime.bigint() - t) });
    });`;
  const workers = Array.from({ length: threads }, () => new Worker(code, { eval: true }));
  try {
    const runs = await Promise.all(
      workers.map((w) => new Promise<{ bytes: number; ns: number }>((r) => (w.once('message', r), w.postMessage(8)))),
    );
    const ns = Math.max(...runs.map((r) => r.ns));
    return runs.reduce((s, r) => s + r.bytes, 0) / (ns / 1e9);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

/** Copy bandwidth with one thread and with every core; the larger is the limit used. */
async function bandwidths() {
  const bw1 = await copyBandwidth(1);
  const bwN = cpus().length > 1 ? await copyBandwidth(cpus().length) : bw1;
  return { bw1, bwN, bandwidth: Math.max(bw1, bwN) };
}

// ---------------------------------------------------------------- summary: the pair medians against the memory limit
/** The top table: svc's and llama.cpp's medians from the interleaved runs, against memory bandwidth / bytes per token. */
async function writeSummary(pairs: PairResult[]) {
  const { bw1, bwN, bandwidth } = await bandwidths();
  const rows = pairs.filter((p) => !p.error).flatMap((p) => {
    const { weights } = bytesPerToken(join(MODEL_DIR, 'onnx', FILE[p.dtype]!));
    const perToken = weights + kvBytesPerToken(p.promptTokens + TOKENS / 2);
    const limit = bandwidth / perToken;
    return ([['svc', p.svc], ['llama.cpp', p.llama]] as const).map(([engine, r]) =>
      `| ${engine} | ${p.dtype} | ${p.threads} | ${f1(r.ttft)} | ${f1(r.tps)} | ${gb(perToken)} | ${f1(limit)} | ${
        ((100 * r.tps) / limit).toFixed(0)
      } % |`
    );
  });
  const sizes = DTYPES.map((d) => `${d} ${gb(statSync(join(MODEL_DIR, 'onnx', FILE[d]!)).size)} GB`).join(', ');
  const body = [
    `Model: Qwen2.5-0.5B's shape with random weights (24 layers, hidden 896, 14/2 heads, MLP 4864, vocab 151936, tied embeddings), svc files ${sizes}; generated by \`scripts/models/gen-tiny-models.py --shape qwen2.5-0.5b\`. Native CPU (onnxruntime-node); medians of ${RUNS} interleaved runs per side from "svc against llama.cpp" below (greedy, EOS masked, ${TOKENS} tokens, the model loaded). Machine: ${cpus().length} × ${
      cpus()[0]?.model ?? 'CPU'
    }, ${gb(totalmem())} GB RAM, Node ${process.version}.`,
    `Physical limit = memory bandwidth / bytes read per decoded token. Bandwidth: STREAM-style copy of 256 MiB Float64Arrays, (read + write) / time: ${
      gb(bw1)
    } GB/s with 1 thread, ${
      gb(bwN)
    } GB/s with ${cpus().length}; the larger is used (a copy underrates pure reads, so a fast engine can pass 100 %). Bytes per token: every initializer a MatMul reads in svc's file (the tied LM head in full), one row of the Gather-only embedding table, and the fp32 KV cache at the mean context length; llama.cpp's GGUF reads about as much.`,
    '',
    '| engine | dtype | threads | time to first token (ms) | decode (tokens/s) | bytes read / token (GB) | limit (tokens/s) | of limit |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    'Time to first token covers prompt evaluation (prefill of the chat-templated prompt) and the first token. Decode tokens/s excludes the first token. WASM rows are in their own section.',
    '',
    "**WebGPU:** a real GPU's figures (0.5B and 1.5B shapes, both WebGPU paths, against the GPU's copy bandwidth) are in \"Text generation: WebGPU on a real GPU\", taken by scripts/bench/generate-webgpu.ts on a machine with one (scripts/bench/webgpu-device.sh). Without a GPU both paths are exercised on a software adapter, Mesa 25's lavapipe: test/runtimes/webgpu.test.ts runs transformers.js on onnxruntime-node's WebGPU provider (Dawn) under Node, Bun and Deno and on onnxruntime-web's WebGPU backend under Deno, and checks torch's greedy tokens; lavapipe is a CPU rasterizer, so its speed says nothing about a GPU and is not listed.",
  ].join('\n');
  const { writeSection } = (await import('./write-benchmarks.mjs' as string)) as { writeSection: (title: string, body: string) => void };
  writeSection(section('Text generation (decode tokens/s, time to first token)'), body);
  console.log(body);
}

// ---------------------------------------------------------------- parent
/** This script run as a child with `args`: its @@RESULT line, and why there is none (its exit status, the end of its stderr). */
/** Runs this script as a child, in this checkout or (`cwd`) in another one holding a copy of it. */
function runChild(args: string[], cwd?: string): { line?: string; why: string } {
  const p = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench/generate.ts', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', BENCH_MODEL_DIR: MODEL_DIR },
    maxBuffer: 64 << 20,
    timeout: 20 * 60_000,
  });
  const line = (p.stdout ?? '').split('\n').find((l) => l.startsWith('@@RESULT '));
  return { line, why: `failed (${p.status}): ${(p.stderr ?? '').trim().split('\n').slice(-3).join(' / ')}` };
}
/** The path svc's native kernels take on this CPU (src/runtime/kernels.ts), for the status lines and section titles. */
export const KERNELS = nativeKernels()?.path ?? 'none';
/** Whether svc's own kernels run decoders here (AVX-512 VNNI or AVX2: src/services/inference/ort-sessions.ts). */
const OWN = KERNELS === 'avx512vnni' || KERNELS === 'avx2';
/**
 * A section's title: on x64 without VNNI the figures go to sections of their own, beside those of a CPU with it,
 * since the kernels differ (native/kernels/avx2.c) and so does what limits them.
 */
export const section = (title: string) => (KERNELS === 'avx2' ? `${title}, x64 with AVX2 (no VNNI)` : title);
const gb = (b: number) => (b / 1e9).toFixed(2);
const f1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));

async function main() {
  if (process.argv[2] === '--pair-child') {
    const [dtype, threads] = [process.argv[3], Number(process.argv[4])];
    const r = await pairChild(dtype, threads, process.argv[5] === 'long' ? LONG_PROMPT : PROMPT, process.argv[6]).catch((
      e,
    ): PairResult => ({
      dtype,
      threads,
      svc: { ttft: NaN, tps: NaN, cpu: [] },
      llama: { ttft: NaN, tps: NaN, cpu: [] },
      promptTokens: 0,
      error: String(e?.message ?? e).split('\n')[0],
    }));
    process.stdout.write(`@@RESULT ${JSON.stringify(r)}\n`);
    process.exit(0); // llama.cpp's threads would keep the process alive
  }
  if (process.argv[2] === '--http-child') {
    const [dtype, threads] = [process.argv[3]!, Number(process.argv[4])];
    const nan = { ttft: NaN, tps: NaN };
    const r = await httpChild(dtype, threads).catch((e): HttpResult => ({
      dtype,
      threads,
      direct: nan,
      http: nan,
      error: String(e?.message ?? e).split('\n')[0],
    }));
    process.stdout.write(`@@RESULT ${JSON.stringify(r)}\n`);
    process.exit(0);
  }
  if (process.argv[2] === '--loop-child') {
    const r = await loopChild(process.argv[3]!, Number(process.argv[4])).catch((e) => ({ error: String(e?.message ?? e).split('\n')[0] }));
    process.stdout.write(`@@RESULT ${JSON.stringify(r)}\n`);
    return;
  }
  if (process.argv[2] === '--batch-child') {
    const [dtype, threads] = [process.argv[3], Number(process.argv[4])];
    const r = await batchChild(dtype, threads).catch((e): BatchResult => ({
      dtype,
      threads,
      oneTps: NaN,
      fourTps: NaN,
      ttftAlone: NaN,
      ttftJoin: NaN,
      ttftBurst: NaN,
      stepOne: NaN,
      stepFour: NaN,
      sampledOneTps: NaN,
      sampledFourTps: NaN,
      error: String(e?.message ?? e).split('\n')[0],
    }));
    process.stdout.write(`@@RESULT ${JSON.stringify(r)}\n`);
    return;
  }
  if (process.argv[2] === '--child') {
    const [backend, dtype, threads] = [process.argv[3], process.argv[4], Number(process.argv[5])];
    const r = await child(backend, dtype, threads).catch((e): ChildResult => ({
      backend,
      dtype,
      threads,
      error: String(e?.message ?? e).split('\n')[0],
    }));
    process.stdout.write(`@@RESULT ${JSON.stringify(r)}\n`);
    return;
  }
  if (!existsSync(join(MODEL_DIR, 'config.json'))) {
    console.error(`generating the benchmark model into ${MODEL_DIR} (heavy: several GB of writes, minutes)`);
    const g = spawnSync('/usr/bin/python3', [
      'scripts/models/gen-tiny-models.py',
      '--shape',
      'qwen2.5-0.5b',
      MODEL_DIR,
      '--dtypes',
      `fp32,${DTYPES.join(',')}`,
    ], { stdio: 'inherit' });
    if (g.status !== 0) throw new Error('model generation failed');
  }

  const parts = (process.env.BENCH_PARTS ?? 'pair,batch,http').split(',');
  const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const loadSeen: string[] = [];
  const spawnChild = (args: string[], cwd?: string) => {
    loadSeen.push(load());
    const { line, why } = runChild(args, cwd);
    if (!line) throw new Error(`child ${args.join(' ')} ${why}`);
    const r = JSON.parse(line.slice(9));
    console.error(JSON.stringify(r));
    return r;
  };
  const writer0 = './write-benchmarks.mjs';
  const { writeSection: write0 } = (await import(writer0)) as { writeSection: (title: string, body: string) => void };
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}`;

  if (parts.includes('loop')) {
    const rowsL = DTYPES.map((
      dtype,
    ) => (console.error(`decode loop before/after: ${dtype} ...`), spawnChild(['--loop-child', dtype, '1'])));
    const body = [
      `One stream, one intra-op thread, greedy, EOS masked, ${TOKENS} tokens, the same chat prompt; "before" = transformers.js' \`generate\` (its loop: logits processors over a [batch, vocab] tensor, argmax through its sampler), "after" = svc's own decode loop (src/services/inference/batch-decoder.ts: the session called directly, greedy argmax without copying the vocabulary, the KV cache kept in place in the inference thread with only each step's new keys and values fetched into it). Both feed \`num_logits_to_keep\` = 1 (the LM head runs for the last position only). Alternating runs in one process, medians of ${RUNS}. Machine: ${machine}; load average at start: ${
        loadSeen.at(-1)
      }.`,
      '',
      '| dtype | before: TTFT (ms) | before: decode (tok/s) | after: TTFT (ms) | after: decode (tok/s) | decode after / before | same text |',
      '|---|---:|---:|---:|---:|---:|---|',
      ...rowsL.map((r) =>
        r.error
          ? `| failed: ${String(r.error).replace(/\|/g, '/')} | | | | | | |`
          : `| ${r.dtype} | ${f1(r.before.ttft)} | ${f1(r.before.tps)} | ${f1(r.after.ttft)} | ${f1(r.after.tps)} | ${
            (r.after.tps / r.before.tps).toFixed(2)
          } | ${r.sameText ? 'yes' : 'NO'} |`
      ),
      '',
      'Both run the same session, whose graph reads the KV heads unrepeated (src/services/inference/grouped-attention.ts); "before" gets back and feeds again the whole cache at every step, "after" keeps it in place. The prefill is the same call on both sides; with runs alternating, "after" pays for the collection of the buffers each "before" run moved out of the inference thread, which lands in the next run there.',
      ...(rowsL.some((r) => !r.error && !r.sameText)
        ? [
          '',
          '"Same text" NO: "after" attends over its cache\'s whole capacity (the unused positions masked), so its attention sums round differently in the last bits; the int8 activations of q8 and q4 are quantized with a scale taken from each tensor\'s range, which magnifies that into logit differences large enough to flip this random model\'s nearly flat argmax within a few tokens. In fp32 the two paths agree to float rounding: test/services/inference/batching.test.ts checks that the loop gives exactly transformers.js\' tokens on the fp32 fixture (150 tokens, its cache laid out again several times).',
        ]
        : []),
    ].join('\n');
    write0(section('Text generation: decode loop (transformers.js generate vs svc loop)'), body);
    console.log(body);
  }

  if (parts.includes('pair')) {
    const missing = DTYPES.filter((d) => !existsSync(join(MODEL_DIR, GGUF[d]!)));
    if (missing.length) {
      throw new Error(
        `no GGUF for ${
          missing.join(', ')
        } in ${MODEL_DIR}: run PYTHONPATH=.models-cache/pylib /usr/bin/python3 scripts/models/gen-gguf.py ${MODEL_DIR} ${MODEL_DIR}/llama q8_0,q4_0`,
      );
    }
    const pairs: PairResult[] = [];
    for (const threads of THREADS) {
      for (const dtype of DTYPES) {
        console.error(`svc vs llama.cpp: ${dtype} threads=${threads} ...`);
        pairs.push(spawnChild(['--pair-child', dtype, String(threads)]));
      }
    }
    const q = (d: string, t: number) => pairs.find((p) => p.dtype === d && p.threads === t);
    const body = [
      `Same weights on both sides: the torch checkpoint of \`gen-tiny-models.py --shape qwen2.5-0.5b\` (random weights) exported to ONNX and quantized for svc (q8: int8 MatMulInteger; q4: MatMulNBits, block 32, accuracy_level 4), and written as GGUF by \`scripts/models/gen-gguf.py\` for llama.cpp (Q8_0 / Q4_0, the tied embedding/LM head included), run by the prebuilt llama.cpp that \`node-llama-cpp\` ships (CPU build). Both engines in one process, the same prompt token ids (${
        pairs[0]?.promptTokens
      } tokens), greedy, ${TOKENS} tokens decoded per run; runs alternate svc, llama.cpp, svc, … after one warm-up each; medians of ${RUNS} runs per side. Machine: ${machine}.`,
      `Load average at each child start: ${
        loadSeen.join('; ')
      } on ${cpus().length} cores. "cpu share" = process CPU time / wall time / threads per run (1.0 = the engine had its cores to itself).`,
      '',
      ...pairTable(pairs),
      '',
      ...THREADS.map((t) =>
        q('q4', t) && q('q8', t)
          ? `- ${t} thread(s): svc q4 / q8 decode = ${(q('q4', t)!.svc.tps / q('q8', t)!.svc.tps).toFixed(2)}; llama.cpp Q4_0 / Q8_0 = ${
            (q('q4', t)!.llama.tps / q('q8', t)!.llama.tps).toFixed(2)
          }.`
          : ''
      ),
      '',
      'Goals: svc q4 decode ≥ 1.4× q8; svc ≥ 1.2× llama.cpp at q8 and q4, 1 and 2 threads.',
      '',
      pairStatus(pairs),
    ].join('\n');
    write0(section('Text generation: svc against llama.cpp (same weights)'), body);
    console.log(body);
    await writeSummary(pairs);
  }

  if (parts.includes('long')) {
    const pairs: PairResult[] = [];
    const seen = loadSeen.length;
    for (const threads of THREADS) {
      for (const dtype of DTYPES) {
        console.error(`svc vs llama.cpp after a long prompt: ${dtype} threads=${threads} ...`);
        pairs.push(spawnChild(['--pair-child', dtype, String(threads), 'long']));
      }
    }
    const body = [
      `As "svc against llama.cpp (same weights)" above, with a long prompt: the chat prompt's sentence repeated (${
        pairs[0]?.promptTokens
      } prompt tokens), so every decode step attends to about that many cached positions; ${TOKENS} tokens decoded per run, runs alternating, medians of ${RUNS} per side. Machine: ${machine}; load average at each child start: ${
        loadSeen.slice(seen).join('; ')
      }.`,
      '',
      ...pairTable(pairs),
      '',
      "Goal (the issue's, at every context): svc ≥ 1.2× llama.cpp. svc's KV cache stays in place in the inference thread (src/services/inference/batch-decoder.ts: fed at a fixed capacity with the positions past each row masked, only the new keys and values fetched and written in), and its attention reads the KV heads unrepeated (src/services/inference/grouped-attention.ts). Each layer attends to its past and its new positions apart, so no step concatenates them into a copy of the cache (src/services/inference/past-and-new.ts; that saves memory, and time only with several long rows: \"KV cache memory\" below). What is left of each step beyond the weights is the attention over the cache: a row's own positions only (svc's attention kernel leaves out those the mask hides: the capacity past the row, up to an eighth more, and in a batch the other rows' padding).",
    ].join('\n');
    write0(section('Text generation: svc against llama.cpp after a long prompt'), body);
    console.log(body);
  }

  if (parts.includes('hub')) {
    const dirs = hubCopies();
    const pairs: PairResult[] = [];
    const seen = loadSeen.length;
    const label = { level1: 'q4, accuracy_level 1 (as svc ran an unset level before)', unset: 'q4, accuracy_level unset (hub file)' };
    for (const threads of THREADS) {
      for (const which of ['level1', 'unset'] as const) {
        console.error(`4-bit file from the hub (${which}) vs llama.cpp: threads=${threads} ...`);
        pairs.push({ ...spawnChild(['--pair-child', 'q4', String(threads), 'short', dirs[which]]), dtype: label[which] });
      }
    }
    const at = (which: keyof typeof label, t: number) => pairs.find((p) => p.dtype === label[which] && p.threads === t);
    const body = [
      `The q4 graph of "svc against llama.cpp (same weights)" as the hub's q4 files are made: transformers.js' quantizer (which made the hub's q4 files, the catalog's default quant) leaves MatMulNBits' \`accuracy_level\` unset, which ONNX Runtime runs with fp32 activations, the same kernel as level 1. svc now gives such nodes level 4 where it creates a CPU session (src/services/inference/nbits-accuracy.ts: int8 activations per block, as llama.cpp's 4-bit formats and svc's own quantizer do); a level the file sets is kept, so the level-1 row is what svc did with the hub's files before. Both graphs edited from the benchmark model's q4 graph by the \`onnx\` package; each against llama.cpp Q4_0 on the same weights in the same process, runs alternating, ${TOKENS} tokens decoded per run, medians of ${RUNS} per side. Machine: ${machine}; load average at each child start: ${
        loadSeen.slice(seen).join('; ')
      }.`,
      '',
      ...pairTable(pairs, 'graph'),
      '',
      ...THREADS.map((t) =>
        at('unset', t) && at('level1', t)
          ? `- ${t} thread(s): decode of the hub file now / before = ${
            (at('unset', t)!.svc.tps / at('level1', t)!.svc.tps).toFixed(2)
          }; time to first token now / before = ${(at('unset', t)!.svc.ttft / at('level1', t)!.svc.ttft).toFixed(2)}.`
          : ''
      ),
    ].join('\n');
    write0(section('Text generation: 4-bit files from the hub (accuracy_level unset)'), body);
    console.log(body);
  }

  if (parts.includes('http')) {
    const rowsH: HttpResult[] = [];
    for (const threads of THREADS) {
      console.error(`HTTP vs direct: q8 threads=${threads} ...`);
      rowsH.push(spawnChild(['--http-child', 'q8', String(threads)]));
    }
    const body = [
      `One server, the q8 model, ${TOKENS} greedy tokens (EOS masked) of a streamed chat completion; "HTTP" = the official \`openai\` client in its own process (scripts/bench/openai-client.mjs) against \`/v1/chat/completions\`, "direct" = \`engine.generate\` called in the server's process with the same messages and the model's defaults; both time the first text delta and the last one. Alternating runs after a warm-up of each, medians of ${RUNS}. Machine: ${machine}; load average at each child start: ${
        loadSeen.slice(-rowsH.length).join('; ')
      }.`,
      '',
      '| threads | direct TTFT (ms) | direct decode (tok/s) | HTTP TTFT (ms) | HTTP decode (tok/s) | HTTP / direct decode |',
      '|---:|---:|---:|---:|---:|---:|',
      ...rowsH.map((r) =>
        r.error
          ? `| ${r.threads} | failed: ${r.error.replace(/\|/g, '/')} | | | | |`
          : `| ${r.threads} | ${f1(r.direct.ttft)} | ${f1(r.direct.tps)} | ${f1(r.http.ttft)} | ${f1(r.http.tps)} | ${
            (r.http.tps / r.direct.tps).toFixed(2)
          } |`
      ),
      '',
      'Goal: the HTTP path within 5 % of the direct engine at every thread count (ratio ≥ 0.95).',
    ].join('\n');
    write0(section('Text generation: HTTP against the engine called directly'), body);
    console.log(body);
  }

  if (parts.includes('batch')) {
    const rowsB: BatchResult[] = [];
    // BENCH_BASELINE_DIR: another checkout of svc (node_modules installed, the native addon built) whose
    // engine runs the same children, alternating with this one's; this script is copied into it
    const baseline = process.env.BENCH_BASELINE_DIR;
    if (baseline) copyFileSync(fileURLToPath(import.meta.url), join(baseline, 'scripts/bench/generate.ts'));
    const rowsBase: BatchResult[] = [];
    const batchThreads = (process.env.BENCH_BATCH_THREADS ?? '1,2').split(',');
    for (const threads of batchThreads) {
      for (const dtype of (process.env.BENCH_BATCH_DTYPES ?? 'q8,q4').split(',')) {
        console.error(`continuous batching: ${dtype} threads=${threads} ...`);
        rowsB.push(spawnChild(['--batch-child', dtype, threads]));
        if (baseline) rowsBase.push(spawnChild(['--batch-child', dtype, threads], baseline));
      }
    }
    const baseRev = baseline ? spawnSync('git', ['-C', baseline, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim() : '';
    const body = [
      `One model, ${
        batchThreads.join(' and ')
      } intra-op thread(s) (the server's default is 1), greedy, EOS masked, ${TOKENS} tokens per stream, the same chat prompt; medians of ${RUNS} rounds, each round: one stream alone, then 4 started at once, then a request arriving while 3 others decode. Times are the engine's own token timings. Aggregate decode = tokens all 4 streams produced per second over the span where all 4 were decoding. Machine: ${machine}; load average at start: ${
        loadSeen.at(-1)
      }.`,
      '',
      '| dtype | threads | 1 stream (tok/s) | 4 streams aggregate (tok/s) | × one stream | decode step, 1 row / 4 rows (ms) | between steps, 1 row / 4 rows (ms) | TTFT alone (ms) | TTFT joining 3 decoding streams (ms) | × alone | TTFT, worst of 4 started at once (ms) |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...rowsB.map((r) =>
        r.error
          ? `| ${r.dtype} | ${r.threads} | failed: ${r.error.replace(/\|/g, '/')} | | | | | | | | |`
          : `| ${r.dtype} | ${r.threads} | ${f1(r.oneTps)} | ${f1(r.fourTps)} | ${(r.fourTps / r.oneTps).toFixed(2)} | ${f1(r.stepOne)} / ${
            f1(r.stepFour)
          } | ${f1(1000 / r.oneTps - r.stepOne)} / ${f1(4000 / r.fourTps - r.stepFour)} | ${f1(r.ttftAlone)} | ${f1(r.ttftJoin)} | ${
            (r.ttftJoin / r.ttftAlone).toFixed(2)
          } | ${f1(r.ttftBurst)} |`
      ),
      '',
      "Decode step = median time of the session call of one decode step as the server's thread sees it (the model, and the messages to and from the inference thread; where greedy steps ran ahead in the inference thread, several in one call, each step's share of that call), with 1 row while a stream runs alone and with 4 rows while 4 decode together. Between steps = the rest of each token's time: choosing each row's token (its processors, argmax over the vocabulary), streaming it, and the loop around. Aggregate ≥ 2.5× needs 4 rows (step and between) within 1.6× one row.",
      '',
      `**Status of this run:** ${
        rowsB.filter((r) => !r.error).map((r) => {
          const alone = 1000 / r.oneTps;
          const callsAllow = (4 * alone) / (r.stepFour + alone - r.stepOne); // 4 rows' step, one row's time between
          const met = r.fourTps / r.oneTps >= 2.5;
          const why = met
            ? ''
            : ` (the session calls alone would allow ${callsAllow.toFixed(2)}×: ${
              callsAllow < 2.5 ? 'the 4-row step limits it' : 'the work between steps limits it'
            })`;
          return `${r.dtype} ${r.threads} thread(s): aggregate ${met ? 'met' : '**not met**'}${why}, TTFT joining ${
            r.ttftJoin / r.ttftAlone <= 2 ? 'met' : '**not met**'
          }`;
        }).join('; ')
      }. The 4-row step grows in the weight products: ${
        OWN
          ? `every 4- and 8-bit product runs on svc's own kernels (src/services/inference/weight-split.ts; path ${KERNELS}), memory-bound with one row`
          : "without svc's kernels ONNX Runtime's int8 kernels run them, compute-bound with 4 rows, q4's `MatMulNBits` more than q8's"
      }; between steps, every row adds its own token choice (logits processors, argmax over the vocabulary) and streaming on the server's thread.`,
      '',
      `Goals: 4 streams ≥ 2.5× one stream; each stream's TTFT with 4 in flight ≤ 2× alone. Requests waiting together are prefilled together, in calls of ${PREFILL_CHUNK_ALONE} tokens; a request arriving while others decode is prefilled in chunks of ${PREFILL_CHUNK} tokens with a decode step of the others between chunks (src/services/inference/batch-decoder.ts).`,
      '',
      `The same rounds sampling instead of greedy (temperature ${SAMPLED.temperature}, top_p ${SAMPLED.topP}, no top_k: every token weighs the whole vocabulary; a seed per stream), run after the greedy ones in each round:`,
      '',
      '| engine | dtype | threads | 1 stream sampling (tok/s) | 4 streams sampling, aggregate (tok/s) | × one stream | greedy 1 stream (tok/s) | greedy 4 streams (tok/s) |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
      ...[...rowsB.map((r) => ['this tree', r] as const), ...rowsBase.map((r) => [`baseline ${baseRev}`, r] as const)]
        .filter(([, r]) => !r.error).map(([engine, r]) =>
          `| ${engine} | ${r.dtype} | ${r.threads} | ${f1(r.sampledOneTps)} | ${f1(r.sampledFourTps)} | ${
            (r.sampledFourTps / r.sampledOneTps).toFixed(2)
          } | ${f1(r.oneTps)} | ${f1(r.fourTps)} |`
        ),
      ...(baseline
        ? [
          '',
          `Baseline: commit ${baseRev} (BENCH_BASELINE_DIR) running this script's children with its own engine; for each configuration its child ran right after this tree's.`,
        ]
        : []),
      '',
      "Each row's draw is data here (EOS suppressed, then temperature and top_p with its seed), so it is taken in the inference thread, up to RUN_AHEAD steps a run as greedy ones are (src/services/inference/batch-decoder.ts); the draw itself: src/services/inference/sampling.ts (top-k by a heap read once, top-p with only the tokens at the nucleus' boundary sorted, weights by a polynomial exp).",
    ].join('\n');
    write0(section('Text generation: continuous batching (4 concurrent streams)'), body);
    console.log(body);
  }
  if (!parts.includes('table')) return;

  const { bw1, bwN, bandwidth } = await bandwidths();
  console.error(`memory copy bandwidth: ${gb(bw1)} GB/s (1 thread), ${gb(bwN)} GB/s (${cpus().length} threads)`);

  const rows: string[] = [];
  const results: ChildResult[] = [];
  for (const dtype of DTYPES) {
    const file = join(MODEL_DIR, 'onnx', FILE[dtype]);
    const { weights } = bytesPerToken(file);
    for (const [backend, threads] of BACKENDS.flatMap((b) => (b === 'cpu' ? THREADS : [1]).map((t) => [b, t] as const))) {
      console.error(`running ${backend} ${dtype} threads=${threads} ...`);
      const { line, why } = runChild(['--child', backend, dtype, String(threads)]);
      const r: ChildResult = line ? JSON.parse(line.slice(9)) : { backend, dtype, threads, error: `child ${why}` };
      results.push(r);
      const ctx = (r.promptTokens ?? 30) + TOKENS / 2;
      const perToken = weights + kvBytesPerToken(ctx);
      const limit = bandwidth / perToken;
      console.error(JSON.stringify(r));
      rows.push(
        r.error
          ? `| ${backend} | ${dtype} | ${threads} | – | – | – | ${gb(perToken)} | ${f1(limit)} | – | failed: ${
            r.error.replace(/\|/g, '/')
          } |`
          : `| ${backend} | ${dtype} | ${threads} | ${r.device} (${r.ort}) | ${f1(r.ttftMs)} | ${f1(r.decodeTps)} | ${gb(perToken)} | ${
            f1(limit)
          } | ${((100 * r.decodeTps!) / limit).toFixed(0)} % | load ${(r.loadMs! / 1000).toFixed(1)} s, prompt ${r.promptTokens} tokens |`,
      );
    }
  }

  const sizes = DTYPES.map((d) => `${d} ${gb(statSync(join(MODEL_DIR, 'onnx', FILE[d])).size)} GB`).join(', ');
  const body = [
    `Model: Qwen2.5-0.5B's shape with random weights (24 layers, hidden 896, 14/2 heads, MLP 4864, vocab 151936, tied embeddings), files ${sizes}; generated by \`scripts/models/gen-tiny-models.py --shape qwen2.5-0.5b\`.`,
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${
      gb(totalmem())
    } GB RAM, Node ${process.version}. Engine: \`src/services/inference\` (transformers.js, KV cache, greedy, EOS masked so every run decodes ${TOKENS} tokens), intra-op threads as listed (the server default is 1), one warm-up generation first, then the median of ${RUNS} generations.`,
    `Physical limit = memory bandwidth / bytes read per decoded token. Bandwidth: STREAM-style copy of 256 MiB Float64Arrays, (read + write) / time: ${
      gb(bw1)
    } GB/s with 1 thread, ${
      gb(bwN)
    } GB/s with ${cpus().length}; the larger is used. Bytes per token: every initializer a MatMul reads (the tied LM head in full), one row of the Gather-only embedding table, and the fp32 KV cache at the mean context length.`,
    '',
    '| backend | dtype | threads | ran on | time to first token (ms) | decode (tokens/s) | bytes read / token (GB) | limit (tokens/s) | of limit | notes |',
    '|---|---|---:|---|---:|---:|---:|---:|---:|---|',
    ...rows,
    '',
    'Time to first token covers prompt evaluation (prefill of the chat-templated prompt) and the first sampled token, with the model already loaded. Decode tokens/s excludes the first token. Native CPU rows against llama.cpp are in "svc against llama.cpp" below.',
    '',
    "**WebGPU:** a real GPU's figures (0.5B and 1.5B shapes, both WebGPU paths, against the GPU's copy bandwidth) are in \"Text generation: WebGPU on a real GPU\", taken by scripts/bench/generate-webgpu.ts on a machine with one (scripts/bench/webgpu-device.sh). Without a GPU both paths are exercised on a software adapter, Mesa 25's lavapipe: test/runtimes/webgpu.test.ts runs transformers.js on onnxruntime-node's WebGPU provider (Dawn) under Node, Bun and Deno and on onnxruntime-web's WebGPU backend under Deno, and checks torch's greedy tokens; lavapipe is a CPU rasterizer, so its speed says nothing about a GPU and is not listed.",
  ].join('\n');
  const writer = './write-benchmarks.mjs';
  const { writeSection } = (await import(writer)) as { writeSection: (title: string, body: string) => void };
  writeSection(section('Text generation: per backend (decode tokens/s, time to first token)'), body);
  console.log(body);
}

// run as a script; imported (scripts/bench/generate-wasm.ts), only its helpers
if (import.meta.url === `file://${process.argv[1]}`) await main();
