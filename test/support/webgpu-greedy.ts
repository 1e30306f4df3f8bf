// Run by the WebGPU runtime test under Deno: load the tiny decoder on the WebGPU backend (navigator.gpu's
// adapter) and greedy-decode torch's reference prompt; prints one JSON line for the test to judge.
import { loadModel } from '../../src/services/inference/load.ts';
import { probeWebGpu } from '../../src/runtime/gpu.ts';
import { TINY_LLAMA } from '../services/inference/fixtures.ts';
import { REF } from '../services/inference/reference.ts';

const gpu = await probeWebGpu();
const m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'webgpu', dtype: 'fp32' });
const ids = REF.generate.prompt_ids;
const t = (xs: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
const n = REF.generate.greedy_ids.length;
const out = (await m.model.generate({
  input_ids: t(ids),
  attention_mask: t(ids.map(() => 1)),
  max_new_tokens: n,
  min_new_tokens: n,
  do_sample: false,
  repetition_penalty: 1,
} as never)) as unknown as { tolist(): bigint[][] };
console.log(
  JSON.stringify({ gpu, device: m.device, ort: m.ort, fallbacks: m.fallbacks, ids: out.tolist()[0]!.slice(ids.length).map(Number) }),
);
await m.dispose();
