// Run by the ONNX Runtime telemetry test under each runtime: onnxruntime-node used as the server uses it, in
// the server's thread (one session through src/services/inference/onnxruntime-node.ts, as Silero VAD and the
// PaddleOCR engine load it) and in the inference thread (tiny-llama on the CPU through the engine, one step).
// The test looks at what the process left in its HOME and TMPDIR.
//   node --import tsx test/support/ort-telemetry-child.ts
import process from 'node:process';
import { importOnnxruntimeNode } from '../../src/services/inference/onnxruntime-node.ts';
import { loadModel } from '../../src/services/inference/load.ts';
import { TINY_LLAMA } from '../services/inference/fixtures.ts';

const ort = await importOnnxruntimeNode();
const session = await ort.InferenceSession.create(`${TINY_LLAMA}/onnx/model.onnx`);
await session.release();

const m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu', dtype: 'fp32' });
const input = m.tokenizer('hello', { return_tensors: 'pt' } as never) as unknown as Record<string, unknown>;
await (m.model as unknown as { generate(o: unknown): Promise<unknown> }).generate({ ...input, max_new_tokens: 1 });
console.log(JSON.stringify({ ort: m.ort, device: m.device }));
await m.dispose();
process.exit(0); // under Deno a worker the engine started (Deno's Worker has no unref) would keep the process alive
