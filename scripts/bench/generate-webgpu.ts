/**
 * WebGPU decode on a real GPU: greedy decode tokens/s of Qwen2.5-shaped random models (0.5B and 1.5B) against
 * the GPU's memory bandwidth (bytes every decode step reads / measured copy bandwidth), on both WebGPU paths
 * the engine has:
 * - "web": onnxruntime-web's WebGPU backend on the runtime's `navigator.gpu` (Deno's wgpu), as `--backend webgpu`
 *   runs under Deno where Dawn finds no adapter;
 * - "native": onnxruntime-node's own WebGPU provider (Dawn), as `--backend webgpu` runs under Node and Bun, and
 *   under Deno where Dawn finds an adapter; the addon and its GPU work are the same in every runtime.
 * Bandwidth: a WebGPU buffer-to-buffer copy (read + write bytes / time) on the same adapter, and CUDA's
 * device-to-device copy through torch where python3 has it (the hardware's figure, for comparison).
 *
 * Run under Deno on a machine with a GPU (scripts/bench/webgpu-device.sh prepares a bare one):
 *   node_modules/.bin/deno run -A scripts/bench/generate-webgpu.ts
 *   BENCH_MODELS=.models-cache/qwen2.5-0.5b,.models-cache/qwen2.5-1.5b BENCH_DTYPES=q4,fp32 BENCH_PATHS=web,native
 *   BENCH_TOKENS=128 BENCH_RUNS=5 BENCH_CHILD_TIMEOUT_S=900. Writes the "Text generation: WebGPU on a real GPU" section of BENCHMARKS.md.
 * Each (model, dtype, path) runs in its own child process, since transformers.js binds one ONNX Runtime per process.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { probeWebGpu } from '../../src/runtime/gpu.ts';
import { bytesPerToken, FILE, kvBytesPerToken, loadMasked, median } from './generate.ts';

const MODELS = (process.env.BENCH_MODELS ?? '.models-cache/qwen2.5-0.5b,.models-cache/qwen2.5-1.5b').split(',');
const DTYPES = (process.env.BENCH_DTYPES ?? 'q4,fp32').split(',');
const PATHS = (process.env.BENCH_PATHS ?? 'web,native').split(',');
const TOKENS = Number(process.env.BENCH_TOKENS ?? 128);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

interface ChildResult {
  model: string;
  dtype: string;
  path: string;
  device?: string;
  ort?: string;
  loadMs?: number;
  promptTokens?: number;
  ttft?: number;
  tps?: number;
  runs?: number[];
  /** Longest event-loop stall while decoding (ms). */
  stallMs?: number;
  error?: string;
}

// ---------------------------------------------------------------- child: one model, one dtype, one path
async function child(path: string, dir: string, dtype: string): Promise<ChildResult> {
  const base = { model: basename(dir), dtype, path };
  // the engine's default under Deno is onnxruntime-node's provider where it finds an adapter (src/services/inference/backend.ts)
  const { initBackend } = await import('../../src/services/inference/backend.ts');
  await initBackend('webgpu', { threads: 1, webGpuOrt: path === 'web' ? 'onnxruntime-web' : 'onnxruntime-node' });
  const { m, generate } = await loadMasked('webgpu', dtype, 1, dir);
  try {
    if (m.device !== 'webgpu' || (path === 'web') !== (m.ort === 'onnxruntime-web')) {
      return { ...base, device: m.device, ort: m.ort, error: `ran on ${m.device} (${m.ort}): ${JSON.stringify([m.fallbacks, m.notes])}` };
    }
    await generate(8); // warm-up: shader compilation and first-run allocations
    const runs: { ttft: number; tps: number; prompt: number }[] = [];
    // how long the server's thread is held: the longest gap between ticks of a 5 ms timer while decoding
    let last = performance.now(), stall = 0;
    const tick = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last - 5);
      last = now;
    }, 5);
    try {
      for (let i = 0; i < RUNS; i++) {
        const { r, ttft, tps } = await generate(TOKENS);
        if (r.completionTokens !== TOKENS) throw new Error(`decoded ${r.completionTokens} tokens, asked for ${TOKENS}`);
        runs.push({ ttft, tps, prompt: r.promptTokens });
      }
    } finally {
      clearInterval(tick);
    }
    return {
      ...base,
      device: m.device,
      ort: m.ort,
      loadMs: m.loadNs / 1e6,
      promptTokens: runs[0]!.prompt,
      ttft: median(runs.map((x) => x.ttft)),
      tps: median(runs.map((x) => x.tps)),
      runs: runs.map((x) => Number(x.tps.toFixed(1))),
      stallMs: stall,
    };
  } finally {
    await m.dispose();
  }
}

// ---------------------------------------------------------------- bandwidth
/**
 * Copy bandwidth of the WebGPU adapter, (read + write) bytes / s: a 256 MiB buffer copied 40 times per submit,
 * timed to work done, median of 5.
 */
async function webgpuCopy(): Promise<number> {
  const gpu = (navigator as unknown as { gpu?: GPU }).gpu;
  const adapter = await gpu?.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) throw new Error('no WebGPU adapter');
  const size = 256 * 1024 * 1024;
  const device = await adapter.requestDevice({ requiredLimits: { maxBufferSize: size } });
  const usage = 0x4 | 0x8; // GPUBufferUsage.COPY_SRC | COPY_DST
  const [a, b] = [device.createBuffer({ size, usage }), device.createBuffer({ size, usage })];
  const pass = async (reps: number) => {
    const enc = device.createCommandEncoder();
    for (let i = 0; i < reps; i++) enc.copyBufferToBuffer(i & 1 ? b : a, 0, i & 1 ? a : b, 0, size);
    const t = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return (2 * size * reps) / ((performance.now() - t) / 1000);
  };
  await pass(4);
  const rates: number[] = [];
  for (let i = 0; i < 5; i++) rates.push(await pass(40));
  device.destroy();
  return median(rates);
}

/** CUDA device-to-device copy bandwidth through torch, where python3 has torch with a GPU; else undefined. */
function cudaCopy(): { name: string; copy: number } | undefined {
  const code = [
    'import json, torch',
    'assert torch.cuda.is_available()',
    'a = torch.empty(256 << 20, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)',
    'rates = []',
    'for _ in range(6):',
    '    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)',
    '    s.record()',
    '    for i in range(40): (b if i % 2 == 0 else a).copy_(a if i % 2 == 0 else b)',
    '    e.record(); torch.cuda.synchronize(); rates.append(2 * a.numel() * 40 / (s.elapsed_time(e) / 1000))',
    'rates = sorted(rates[1:])',
    'print(json.dumps({"name": torch.cuda.get_device_name(), "copy": rates[len(rates) // 2]}))',
  ].join('\n');
  const p = spawnSync('python3', ['-c', code], { encoding: 'utf8', timeout: 120_000 });
  const line = (p.stdout ?? '').trim().split('\n').pop();
  try {
    return line ? JSON.parse(line) : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- parent
function runChild(path: string, dir: string, dtype: string): ChildResult {
  const p = spawnSync(process.execPath, ['run', '-A', 'scripts/bench/generate-webgpu.ts', '--child', path, dir, dtype], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', ONNXRUNTIME_NODE_INSTALL: 'skip' },
    maxBuffer: 64 << 20,
    timeout: Number(process.env.BENCH_CHILD_TIMEOUT_S ?? 900) * 1000,
  });
  const line = (p.stdout ?? '').split('\n').find((l) => l.startsWith('@@RESULT '));
  if (line) return JSON.parse(line.slice('@@RESULT '.length));
  const why = (p.stderr ?? '').trim().split('\n').slice(-3).join(' / ');
  return { model: basename(dir), dtype, path, error: `child failed (${p.status ?? p.signal}): ${why}` };
}

const gb = (b: number) => (b / 1e9).toFixed(2);
const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : '–');
const f1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));
const describe = (dir: string) => {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  return `${c.num_hidden_layers} layers, hidden ${c.hidden_size}, ${c.num_attention_heads}/${c.num_key_value_heads} heads, MLP ${c.intermediate_size}`;
};

async function main() {
  if (process.argv[2] === '--child') {
    const [path, dir, dtype] = process.argv.slice(3) as [string, string, string];
    const r = await child(path, dir, dtype).catch((e): ChildResult => ({
      model: basename(dir),
      dtype,
      path,
      error: String(e?.message ?? e).split('\n')[0],
    }));
    console.log(`@@RESULT ${JSON.stringify(r)}`);
    process.exit(0); // a GPU device or the inference thread may keep the process alive
  }
  // the adapter as the engine sees it (src/runtime/gpu.ts), and its copy bandwidth
  const probe = await probeWebGpu();
  const gpu = { adapter: probe.adapter ? probe.description : `none (${probe.description})`, software: probe.software, copy: NaN };
  if (probe.adapter) gpu.copy = await webgpuCopy().catch(() => NaN);
  const cuda = cudaCopy();
  console.error(`adapter: ${gpu.adapter}; WebGPU copy ${gb(gpu.copy)} GB/s; CUDA copy ${cuda ? gb(cuda.copy) : '–'} GB/s`);
  if (gpu.software) console.error('a software adapter: its figures say nothing about a GPU');
  const rows: string[] = [];
  const dirs = MODELS.map((d) => resolve(d));
  const shapes = dirs.map((dir) => `${basename(dir)}: ${describe(dir)}`);
  // the section is rewritten after every row, so a run cut short still leaves what it measured
  const write = async () => {
    const body = [
      `Adapter: ${gpu.adapter}${gpu.software ? ' (a software adapter: these figures say nothing about a GPU)' : ''}${
        cuda ? `; CUDA sees ${cuda.name}` : ''
      }. Host: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Deno ${process.versions.deno}.`,
      `Models: Qwen2.5 shapes with random weights (${
        shapes.join('; ')
      }; vocab 151936, tied embeddings), from \`scripts/models/gen-tiny-models.py --shape\`. The chat prompt of "Text generation", greedy, EOS masked, ${TOKENS} tokens per run, after one warm-up; medians of ${RUNS} runs. web = onnxruntime-web's WebGPU backend on Deno's navigator.gpu; native = onnxruntime-node's WebGPU provider (Dawn), the path Node and Bun take, and Deno's default where Dawn finds an adapter (its sessions in the inference thread). The path is chosen with the engine's \`webGpuOrt\` option; each runs in its own process. Longest loop stall: the longest gap between ticks of a 5 ms timer on the server's thread while decoding.`,
      `Bandwidth: copy of a 256 MiB buffer, (read + write) bytes / time, median of 5 passes of 40 copies: ${
        gb(gpu.copy)
      } GB/s through WebGPU (copyBufferToBuffer on the same adapter)${
        cuda ? `, ${gb(cuda.copy)} GB/s through CUDA (torch, device to device)` : ''
      }. Bytes read per token: every initializer a MatMul reads (the tied LM head in full), one row of the Gather-only embedding table, and the fp32 KV cache at the mean context length. "Of copy bandwidth" = decode tok/s × bytes per token / bandwidth.`,
      '',
      '| model | dtype | WebGPU path | decode (tok/s) | time to first token (ms) | longest loop stall (ms) | bytes read / token (GB) | read (GB/s) | of WebGPU copy bandwidth | of CUDA copy bandwidth | load; decode tok/s of each run |',
      '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|',
      ...rows,
    ].join('\n');
    const { writeSection } = (await import('./write-benchmarks.mjs' as string)) as { writeSection: (title: string, body: string) => void };
    writeSection('Text generation: WebGPU on a real GPU', body);
    return body;
  };
  for (const dtype of DTYPES) {
    for (const dir of dirs) {
      const file = join(dir, 'onnx', FILE[dtype]!);
      if (!existsSync(file)) continue;
      const { weights } = bytesPerToken(file);
      for (const path of PATHS) {
        console.error(`${basename(dir)} ${dtype} ${path} ...`);
        const r = runChild(path, dir, dtype);
        console.error(JSON.stringify(r));
        if (r.error || r.tps === undefined) {
          rows.push(`| ${r.model} | ${dtype} | ${path} | failed: ${(r.error ?? '').replace(/\|/g, '/').slice(0, 300)} | | | | | | |`);
        } else {
          const perToken = weights + kvBytesPerToken(r.promptTokens! + TOKENS / 2, dir);
          const read = r.tps * perToken;
          rows.push(
            `| ${r.model} | ${dtype} | ${path} (${r.ort}) | ${f1(r.tps)} | ${f1(r.ttft)} | ${f1(r.stallMs)} | ${gb(perToken)} | ${
              gb(read)
            } | **${pct(read / gpu.copy)}** | ${pct(read / (cuda?.copy ?? NaN))} | ${(r.loadMs! / 1000).toFixed(1)} s; runs ${
              r.runs!.join(', ')
            } |`,
          );
        }
        await write();
      }
    }
  }
  console.log(await write());
}

await main();
