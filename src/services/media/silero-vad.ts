/**
 * Silero VAD (v5 weights, as shipped in @ricky0123/vad-web) through ONNX Runtime: 16 kHz mono audio in
 * windows of 512 samples, each preceded by the last 64 samples of the window before (the context the
 * model was trained with), the recurrent state carried from window to window. One probability of speech
 * per 32 ms window.
 *
 * The session uses onnxruntime-node (one thread) where the native addon loads, else onnxruntime-web;
 * created on first use, released after two idle minutes.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { readFile } from 'node:fs/promises';
import type * as Ort from 'onnxruntime-common';
import { packageFile } from '../../runtime/assets.ts';
import { embeddedOrtWasmPath } from '../../runtime/embedded.ts';
import { capabilityUnavailable } from '../errors.ts';
import { IdleResource } from '../ocr/idle-pool.ts';
import { importOnnxruntimeNode } from '../inference/onnxruntime-node.ts';

export const VAD_SAMPLE_RATE = 16_000;
export const VAD_WINDOW = 512;
const CONTEXT = 64;
export const VAD_MODEL = 'silero-vad-v5';

interface Silero {
  ort: typeof Ort;
  session: Ort.InferenceSession;
  runtime: 'onnxruntime-node' | 'onnxruntime-web';
}

async function loadOrt(): Promise<{ ort: typeof Ort; runtime: Silero['runtime'] }> {
  try {
    return { ort: (await importOnnxruntimeNode()) as unknown as typeof Ort, runtime: 'onnxruntime-node' };
  } catch {
    const ort = (await import('onnxruntime-web')) as unknown as typeof Ort & {
      env: { wasm: { wasmPaths?: unknown; wasmBinary?: unknown; numThreads?: number } };
    };
    if (!ort.env.wasm.wasmPaths && !ort.env.wasm.wasmBinary) {
      // Inside the compiled binary the .wasm is embedded (no node_modules to point at): hand ORT the bytes.
      if (embeddedOrtWasmPath) {
        ort.env.wasm.wasmBinary = await readFile(embeddedOrtWasmPath);
        ort.env.wasm.wasmPaths = {};
      } else ort.env.wasm.wasmPaths = `${dirname(createRequire(import.meta.url).resolve('onnxruntime-web'))}/`;
    }
    ort.env.wasm.numThreads = 1;
    return { ort, runtime: 'onnxruntime-web' };
  }
}

const engine = new IdleResource<Silero>(async () => {
  const { ort, runtime } = await loadOrt();
  let model: Uint8Array;
  try {
    model = new Uint8Array(await readFile(packageFile('@ricky0123/vad-web/dist/silero_vad_v5.onnx')));
  } catch (e) {
    throw capabilityUnavailable(`the Silero VAD model is not installed here (${(e as Error).message.split('\n')[0]})`);
  }
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  return { ort, session, runtime };
}, (s) => s.session.release());

export const releaseSilero = () => engine.release();

/**
 * Speech probabilities of a 16 kHz mono stream, one per 512-sample window (the last window zero-padded).
 * Returns the probabilities and the number of samples read.
 */
export function speechProbabilities(
  audio: AsyncIterable<Float32Array>,
  signal?: AbortSignal,
): Promise<{ probs: Float32Array; samples: number; runtime: string }> {
  return engine.use(async ({ ort, session, runtime }) => {
    let probs = new Float32Array(1024), count = 0, samples = 0;
    let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
    const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(VAD_SAMPLE_RATE)]), []);
    const input = new Float32Array(CONTEXT + VAD_WINDOW); // [context | window]
    let fill = 0; // samples of the current window so far
    const step = async () => {
      const out = await session.run({ input: new ort.Tensor('float32', input.slice(), [1, CONTEXT + VAD_WINDOW]), state, sr });
      state = out.stateN as Ort.Tensor as typeof state;
      if (count === probs.length) {
        const grown = new Float32Array(probs.length * 2);
        grown.set(probs);
        probs = grown;
      }
      probs[count++] = (out.output!.data as Float32Array)[0]!;
      input.copyWithin(0, VAD_WINDOW, VAD_WINDOW + CONTEXT); // the window's last 64 samples become the next context
      fill = 0;
    };
    for await (const chunk of audio) {
      signal?.throwIfAborted();
      samples += chunk.length;
      for (let i = 0; i < chunk.length;) {
        const n = Math.min(VAD_WINDOW - fill, chunk.length - i);
        input.set(chunk.subarray(i, i + n), CONTEXT + fill);
        fill += n;
        i += n;
        if (fill === VAD_WINDOW) await step();
      }
    }
    if (fill > 0) {
      input.fill(0, CONTEXT + fill);
      await step();
    }
    return { probs: probs.slice(0, count), samples, runtime };
  });
}
