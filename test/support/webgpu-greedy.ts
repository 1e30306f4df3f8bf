// Run by the WebGPU runtime test under Deno: load the tiny decoder on the WebGPU backend (navigator.gpu's
// adapter) and greedy-decode torch's reference prompt; prints one JSON line for the test to judge.
import { loadModel } from '../../src/services/inference/load.ts';
import { probeWebGpu } from '../../src/runtime/gpu.ts';
import { TINY_LLAMA } from '../services/inference/fixtures.ts';
import { greedyOnReferencePrompt } from '../services/inference/reference.ts';

const gpu = await probeWebGpu();
const m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'webgpu', dtype: 'fp32' });
const ids = await greedyOnReferencePrompt(m.model, m.tf.Tensor);
console.log(JSON.stringify({ gpu, device: m.device, ort: m.ort, fallbacks: m.fallbacks, ids }));
await m.dispose();
