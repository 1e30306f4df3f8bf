/**
 * Greedy token ids from a backend, for cross-backend comparison. Run as a script it loads tiny-llama on
 * the backend named in argv[2] and prints JSON: WASM and native ONNX Runtime cannot share one process
 * (transformers.js binds its runtime once), so the WASM side runs in a child process.
 */
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import type { BackendSetting } from '../../../src/services/inference/backend.ts';
import { TINY_LLAMA } from './fixtures.ts';

export const PROMPT = 'The capital of France is';

export async function greedyIds(m: LoadedModel, prompt = PROMPT, n = 32): Promise<number[]> {
  const inputs = m.tokenizer(prompt) as unknown as { input_ids: { dims: number[] } };
  const out = (await m.model.generate(
    { ...(inputs as object), max_new_tokens: n, min_new_tokens: n, do_sample: false, repetition_penalty: 1 } as never,
  )) as unknown as {
    tolist(): bigint[][];
  };
  return out.tolist()[0].slice(inputs.input_ids.dims[1]).map(Number);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const backend = (process.argv[2] ?? 'wasm') as BackendSetting;
  const m = await loadModel(TINY_LLAMA, 'text-generation', { backend });
  const ids = await greedyIds(m);
  process.stdout.write(JSON.stringify({ device: m.device, ort: m.ort, ids, loadNs: m.loadNs }) + '\n');
  await m.dispose();
}
