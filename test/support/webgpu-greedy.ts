// Run by the WebGPU runtime test under Deno: load a decoder (the model directory given, default tiny-llama) on
// the WebGPU backend (navigator.gpu's adapter) and greedy-decode torch's reference prompt; prints one JSON line
// for the test to judge. It also reports where the `present.*` outputs (the KV cache) came back at each step,
// and writes the graphs onnxruntime-web was handed (after the decoder rewrite) into the directory given second,
// for the test to read with the onnx package.
//   deno run -A test/support/webgpu-greedy.ts [MODEL_DIR [GRAPHS_DIR]]
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { initBackend } from '../../src/services/inference/backend.ts';
import { loadModel } from '../../src/services/inference/load.ts';
import { probeWebGpu } from '../../src/runtime/gpu.ts';
import { TINY_LLAMA } from '../services/inference/fixtures.ts';
import { greedyOnReferencePrompt } from '../services/inference/reference.ts';

type Session = { run(...a: unknown[]): Promise<Record<string, { location?: string }>> };
type Create = (model: unknown, opts?: unknown) => Promise<Session>;

const [dir = TINY_LLAMA, graphsDir] = process.argv.slice(2);
const gpu = await probeWebGpu();
await initBackend('webgpu');

// onnxruntime-web's own entry point: the graph bytes it was handed (after any rewrite of ours)
const graphs: Uint8Array[] = [];
const web = (await import('onnxruntime-web/webgpu')).InferenceSession as unknown as { create: Create };
const webCreate = web.create.bind(web);
web.create = (model, opts) => {
  if (model instanceof Uint8Array) graphs.push(model);
  return webCreate(model, opts);
};

// the runtime transformers.js was bound to: every session it creates, and the outputs of each of its runs
const bound = (globalThis as Record<symbol, { InferenceSession: { create: Create } }>)[Symbol.for('onnxruntime')]!.InferenceSession;
const boundCreate = bound.create.bind(bound);
let sessions = 0, runs = 0;
const cacheLocations = new Set<string>();
bound.create = async (model, opts) => {
  const s = await boundCreate(model, opts);
  sessions++;
  const run = s.run.bind(s);
  s.run = async (...a) => {
    const out = await run(...a);
    runs++;
    for (const [name, t] of Object.entries(out)) if (name.startsWith('present')) cacheLocations.add(String(t.location));
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
  graphs: graphs.length,
}));
await m.dispose();
