// Run by the WebGPU runtime test: load a decoder (the model directory given, default tiny-llama) on the WebGPU
// backend and greedy-decode torch's reference prompt; prints one JSON line for the test to judge. ORT names the
// ONNX Runtime asked for under Deno (onnxruntime-web on navigator.gpu's adapter, or onnxruntime-node's own
// provider); Node and Bun have only the latter. It also reports where the `present.*` outputs (the KV cache)
// came back at each step (and what stood for them: an inference-thread id), and writes the graphs
// onnxruntime-web was handed (after the decoder rewrite) into GRAPHS_DIR, for the test to read with the onnx package.
//   deno run -A test/support/webgpu-greedy.ts ORT [MODEL_DIR [GRAPHS_DIR]]
//   node --import tsx test/support/webgpu-greedy.ts onnxruntime-node
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { initBackend, type OrtPackage } from '../../src/services/inference/backend.ts';
import { loadModel } from '../../src/services/inference/load.ts';
import { probeWebGpu } from '../../src/runtime/gpu.ts';
import { TINY_LLAMA } from '../services/inference/fixtures.ts';
import { greedyOnReferencePrompt } from '../services/inference/reference.ts';

type Session = {
  run(...a: unknown[]): Promise<Record<string, { location?: string; gpuBuffer?: { svcGpu?: number }; getData(): Promise<unknown> }>>;
};
type Create = (model: unknown, opts?: unknown) => Promise<Session>;

const [ort, dir = TINY_LLAMA, graphsDir] = process.argv.slice(2) as [OrtPackage, string?, string?];
const gpu = await probeWebGpu();
await initBackend('webgpu', { webGpuOrt: ort });

// onnxruntime-web's own entry point: the graph bytes it was handed (after any rewrite of ours)
const graphs: Uint8Array[] = [];
const web = (await import('onnxruntime-web/webgpu')).InferenceSession as unknown as { create: Create };
const webCreate = web.create.bind(web);
web.create = (model, opts) => {
  if (model instanceof Uint8Array) graphs.push(model);
  return webCreate(model, opts);
};

// the runtime transformers.js was bound to (injected, or onnxruntime-node's package object, which it holds):
// every session it creates, and the outputs of each of its runs
const injected = (globalThis as Record<symbol, { InferenceSession: { create: Create } }>)[Symbol.for('onnxruntime')];
const bound = (injected ?? await import('onnxruntime-node') as unknown as { InferenceSession: { create: Create } }).InferenceSession;
const boundCreate = bound.create.bind(bound);
let sessions = 0, runs = 0;
const cacheLocations = new Set<string>();
let threadHeld = 0, cacheOutputs = 0;
/** What reading a stand-in back gave (once): onnxruntime-node aborts the process on such a read, so it is refused. */
let readBack: string | undefined;
bound.create = async (model, opts) => {
  const s = await boundCreate(model, opts);
  sessions++;
  const run = s.run.bind(s);
  s.run = async (...a) => {
    const out = await run(...a);
    runs++;
    for (const [name, t] of Object.entries(out)) {
      if (!name.startsWith('present')) continue;
      cacheLocations.add(String(t.location));
      cacheOutputs++;
      if (typeof t.gpuBuffer?.svcGpu !== 'number') continue;
      threadHeld++;
      readBack ??= await t.getData().then(() => 'read', (e: Error) => `refused: ${e.message}`);
    }
    return out;
  };
  return s;
};

const m = await loadModel(dir, 'text-generation', { backend: 'webgpu', dtype: 'fp32' });
const ids = await greedyOnReferencePrompt(m.model, m.tf.Tensor);
if (graphsDir) graphs.forEach((g, i) => writeFileSync(join(graphsDir, `session-${i}.onnx`), g));
console.log(JSON.stringify({
  gpu,
  device: m.device,
  ort: m.ort,
  fallbacks: m.fallbacks,
  ids,
  sessions,
  runs,
  cacheLocations: [...cacheLocations].sort(),
  cacheOutputs,
  threadHeld,
  readBack,
  graphs: graphs.length,
}));
await m.dispose();
