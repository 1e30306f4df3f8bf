/**
 * The batch-invariance suite (batch-invariance.test.ts natively, batch-invariance-wasm.test.ts on WASM): a stream decoding in a batch gets the logits it gets alone, bit for bit, on a decoder cut around its 4-bit or
 * 8-bit products (svc's kernels, native and WASM: products, MLPs, norms and each decode step's attention). A request joining lays
 * the batch's cache out again: the shorter rows left-padded to the longest, a capacity past it; the attention
 * leaves those hidden positions out rather than weighing them 0, so that a greedy answer does not depend on the
 * load. (This model's exporter masks with -1e9, as many do; float32's lowest and -infinity are checked by
 * test/runtime/attention.test.ts.) 8-bit products quantize each row's activations by themselves in a decode step,
 * where the graph's DynamicQuantizeLinear takes one scale over the whole batch.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { nativeKernelsUnavailable } from '../../../src/runtime/kernels.ts';
import { wasmKernelsUnavailable } from '../../../src/runtime/wasm-kernels.ts';
import { batchDecoderFor, PREFILL_CHUNK } from '../../../src/services/inference/batch-decoder.ts';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import type { LogitsProcessorLike } from '../../../src/services/inference/sampling.ts';
import { TINY_LLAMA } from './fixtures.ts';

const A = Array.from({ length: 30 }, (_, i) => 20 + ((i * 37) % 400));
const SHORT = [5, 77, 300, 41];
const LONG = Array.from({ length: 50 }, (_, i) => 30 + ((i * 53) % 420));
/** Longer than a chunk: joining a running stream it is prefilled in chunks of PREFILL_CHUNK between the stream's steps. */
const CHUNKED = Array.from({ length: 150 }, (_, i) => 25 + ((i * 41) % 430));

/** The suite on one backend (a process binds one ONNX Runtime package): its 4-bit and 8-bit decoders. */
export function batchInvariance(backend: 'cpu' | 'wasm'): void {
  for (const dtype of ['q4', 'q8'] as const) {
    describe(`${backend} ${dtype}`, () => {
      let m: LoadedModel;
      before(async () => {
        m = await loadModel(TINY_LLAMA, 'text-generation', { backend, dtype });
      });
      after(() => m.dispose());

      /** Greedy tokens and each step's logits (the processor is code: every step is taken one at a time). */
      function stream(promptIds: number[], maxNew: number, onToken: (n: number) => void = () => {}) {
        const logits: Float32Array[] = [];
        const tokens: number[] = [];
        const record: LogitsProcessorLike = (
          _ids: bigint[][],
          l: unknown,
        ) => (logits.push(Float32Array.from((l as { data: Float32Array }).data)), l);
        const done = batchDecoderFor(m)!.run({
          promptIds,
          maxNew,
          processors: [record],
          signal: new AbortController().signal,
          onToken: (t) => (tokens.push(t), onToken(tokens.length), false),
        });
        return { done, logits, tokens };
      }

      test(`the decoder is cut around its ${dtype === 'q4' ? '4' : '8'}-bit products, on svc's ${backend === 'cpu' ? 'native' : 'WASM'} kernels`, () => {
        assert.equal(backend === 'cpu' ? nativeKernelsUnavailable() : wasmKernelsUnavailable(), undefined);
        const edits = (m.model as unknown as { sessions: { model: { edits: { mlpsOwnKernel: number } } } }).sessions.model.edits;
        assert.ok(edits.mlpsOwnKernel > 0);
        assert.ok(batchDecoderFor(m));
      });

      for (
        const [name, other] of [
          ['a shorter prompt (left-padded in the batch)', SHORT],
          ['a longer prompt (the running row left-padded)', LONG],
          [`a prompt prefilled in chunks of ${PREFILL_CHUNK} between the running stream's steps`, CHUNKED],
        ] as const
      ) {
        test(`a running stream and ${name} joining it: each one's logits are its logits alone, bit for bit`, async () => {
          const alone = stream(A, 24);
          await alone.done;
          const otherAlone = stream(other, 12);
          await otherAlone.done;
          let joined: ReturnType<typeof stream> | undefined;
          const running = stream(A, 24, (n) => {
            if (n === 4) joined = stream(other, 12);
          });
          await running.done;
          await joined!.done;
          assert.deepEqual(running.tokens, alone.tokens);
          assert.deepEqual(joined!.tokens, otherAlone.tokens);
          assert.equal(running.logits.length, alone.logits.length);
          running.logits.forEach((l, i) => assert.deepEqual(l, alone.logits[i], `the running stream's step ${i}`));
          joined!.logits.forEach((l, i) => assert.deepEqual(l, otherAlone.logits[i], `the joining stream's step ${i}`));
        });
      }

      test("prompts of three lengths prefilled together (left-padded to the longest): each one's logits are its logits alone, bit for bit", async () => {
        const prompts = [SHORT, A, LONG];
        const alone: ReturnType<typeof stream>[] = [];
        for (const p of prompts) {
          const s = stream(p, 10);
          await s.done;
          alone.push(s);
        }
        // asked for at once: one prefill takes them all
        const together = prompts.map((p) => stream(p, 10));
        await Promise.all(together.map((t) => t.done));
        together.forEach((t, r) => {
          assert.deepEqual(t.tokens, alone[r]!.tokens, `prompt ${r}`);
          t.logits.forEach((l, i) => assert.deepEqual(l, alone[r]!.logits[i], `prompt ${r}, step ${i}`));
        });
      });
    });
  }
}
