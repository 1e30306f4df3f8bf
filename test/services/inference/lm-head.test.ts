/**
 * The 4-bit LM head taken out of the graph and run on svc's own kernel (src/services/inference/lm-head.ts).
 * The judge is ONNX Runtime running the graph as the file has it: its own MatMulNBits at level 4 makes the
 * logits the cut graph's hidden states and our kernel must reproduce.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { cutLmHead, LOGITS } from '../../../src/services/inference/lm-head.ts';
import { loadModel } from '../../../src/services/inference/load.ts';
import { batchDecoderFor } from '../../../src/services/inference/batch-decoder.ts';
import { decodeFields, first, indexGraph, modelGraph, ONNX, str } from '../../../src/services/models/onnx-wire.ts';
import { hasVnni } from '../../../src/runtime/cpu.ts';
import { nativeKernels } from '../../../src/runtime/kernels.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { REF } from './reference.ts';

const file = (name: string) => new Uint8Array(readFileSync(join(TINY_LLAMA, 'onnx', name)));
const q4 = file('model_q4.onnx');
const config = JSON.parse(readFileSync(join(TINY_LLAMA, 'config.json'), 'utf8'));
const layers: number = config.num_hidden_layers;
const opts = { intraOpNumThreads: 1, logSeverityLevel: 3 } as const;
const i64 = (xs: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), dims);

/** Two rows of the reference prompt (the second shifted), every position's logits: 2 × L rows for the head. */
function prefill(keep: number) {
  const ids = REF.generate.prompt_ids;
  const L = ids.length;
  return {
    input_ids: i64([...ids, ...ids.map((x) => (x + 5) % config.vocab_size)], [2, L]),
    attention_mask: i64(Array(2 * L).fill(1), [2, L]),
    position_ids: i64([...ids.keys(), ...ids.keys()], [2, L]),
    num_logits_to_keep: i64([keep], []),
    ...Object.fromEntries(
      Array.from({ length: layers }, (_, l) => ['key', 'value'].map((kv) => `past_key_values.${l}.${kv}`)).flat().map((n) => [
        n,
        new ort.Tensor('float32', new Float32Array(0), [2, config.num_key_value_heads, 0, config.head_dim]),
      ]),
    ),
  };
}

/** Largest difference relative to the largest magnitude of `want`. */
function relMax(got: Float32Array, want: Float32Array): number {
  assert.equal(got.length, want.length);
  let d = 0, m = 0;
  for (let i = 0; i < want.length; i++) (d = Math.max(d, Math.abs(got[i]! - want[i]!))), (m = Math.max(m, Math.abs(want[i]!)));
  return d / m;
}

/** Both rows of `prefill` greedy-decoded `steps` tokens by ONNX Runtime on the file's graph (the cache concatenated). */
async function greedyWhole(s: ort.InferenceSession, steps: number): Promise<number[][]> {
  const feeds: Record<string, ort.Tensor> = prefill(1);
  const L = REF.generate.prompt_ids.length;
  const tokens: number[][] = [[], []];
  for (let step = 0; step < steps; step++) {
    const out = await s.run(feeds);
    const v = config.vocab_size;
    const logits = out.logits!.data as Float32Array;
    const next = [0, 1].map((r) => {
      const row = logits.subarray(r * v, (r + 1) * v);
      return row.indexOf(Math.max(...row));
    });
    next.forEach((t, r) => tokens[r]!.push(t));
    for (const name of Object.keys(feeds).filter((n) => n.startsWith('past_key_values.'))) {
      feeds[name] = out[name.replace('past_key_values.', 'present.')]!;
    }
    const len = L + step + 1;
    feeds.input_ids = i64(next, [2, 1]);
    feeds.attention_mask = i64(Array(2 * len).fill(1), [2, len]);
    feeds.position_ids = i64([len - 1, len - 1], [2, 1]);
  }
  return tokens;
}

describe('the graph without its head', () => {
  const cut = cutLmHead(q4)!;

  test('a 4-bit head is taken out: its node and weights gone, its input a graph output in place of logits', () => {
    assert.ok(cut, 'the q4 graph has a 4-bit head');
    assert.deepEqual([cut.head.k, cut.head.n], [config.hidden_size, config.vocab_size]);
    assert.equal(cut.head.b.length, config.vocab_size * (config.hidden_size / 32) * 16);
    const g = modelGraph(cut.bytes)!.graph;
    const { inits, nodes } = indexGraph(g);
    const outputs = g.filter((f) => f.no === ONNX.graph.output).map((f) => str(first(decodeFields(f.bytes!), ONNX.valueInfo.name)?.bytes));
    assert.ok(!outputs.includes(LOGITS) && outputs.includes(cut.head.input));
    assert.ok(!nodes.some((n) => n.outputs.includes(LOGITS)));
    const before = indexGraph(modelGraph(q4)!.graph);
    const head = before.nodes.find((n) => n.outputs[0] === LOGITS)!;
    assert.ok(!inits.has(head.inputs[1]!) && !inits.has(head.inputs[2]!));
    assert.equal(nodes.length, before.nodes.length - 1);
  });

  test('graphs whose logits are not a plain 4-bit MatMulNBits stay as they are', () => {
    assert.equal(cutLmHead(file('model.onnx')), undefined); // fp32 MatMul
    assert.equal(cutLmHead(file('model_quantized.onnx')), undefined); // int8 MatMulInteger
  });

  test("our kernel on the cut graph's hidden states gives ONNX Runtime's logits (every position, both paths, 1 and 2 threads)", async () => {
    const k = nativeKernels();
    assert.ok(k, 'the native kernels are built (npm run build:native)');
    const whole = await ort.InferenceSession.create(q4, opts);
    const part = await ort.InferenceSession.create(cut.bytes, opts);
    const L = REF.generate.prompt_ids.length;
    const want = (await whole.run(prefill(L))).logits!;
    const hidden = (await part.run(prefill(L)))[cut.head.input]!;
    assert.deepEqual(hidden.dims, [2, L, config.hidden_size]);
    const w = k.packQ4(cut.head.b, cut.head.scales, cut.head.k, cut.head.n);
    for (const portable of [false, true]) {
      for (const threads of [1, 2]) {
        const y = new Float32Array(2 * L * config.vocab_size);
        k.matmulQ4(w, hidden.data as Float32Array, 2 * L, y, threads, portable);
        const err = relMax(y, want.data as Float32Array);
        assert.ok(err < 1e-5, `portable ${portable}, ${threads} thread(s): ${err}`);
      }
    }
    await whole.release();
    await part.release();
  });
});

describe('loaded as a model', () => {
  const loaded: { dispose(): Promise<void> }[] = [];
  after(() => Promise.all(loaded.map((m) => m.dispose())));

  test('on the native CPU with VNNI the q4 head runs on our kernel; logits reach transformers.js and the batch decoder', async () => {
    const m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu', dtype: 'q4' });
    loaded.push(m);
    const s = (m.model as unknown as { sessions: { model: { edits: { lmHeadOwnKernel: number }; outputNames: string[] } } }).sessions
      .model;
    // the kernel is used where it is the faster one: AVX-512 VNNI (elsewhere the graph keeps its head)
    assert.equal(s.edits.lmHeadOwnKernel, hasVnni() && nativeKernels()?.path === 'avx512vnni' ? 1 : 0);
    assert.ok(s.outputNames.includes(LOGITS));
    // judge: the file's graph in ONNX Runtime
    const whole = await ort.InferenceSession.create(q4, opts);
    const ids = REF.generate.prompt_ids;
    const want = (await whole.run(prefill(1))).logits!;
    const t = (xs: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [2, ids.length]);
    const out = await (m.model as unknown as (f: unknown) => Promise<{ logits: { dims: number[]; data: Float32Array } }>)({
      input_ids: t([...ids, ...ids.map((x) => (x + 5) % config.vocab_size)]),
      attention_mask: t(Array(2 * ids.length).fill(1)),
    });
    const [, per, v] = out.logits.dims as [number, number, number];
    const last = new Float32Array(2 * v);
    for (let r = 0; r < 2; r++) last.set(out.logits.data.subarray(((r + 1) * per - 1) * v, (r + 1) * per * v), r * v);
    assert.ok(relMax(last, want.data as Float32Array) < 1e-5, `transformers.js' forward: ${relMax(last, want.data as Float32Array)}`);
    // the batch decoder (its logits written into shared memory by the inference thread): ONNX Runtime's greedy tokens
    const steps = 4;
    const tokens: number[][] = [[], []];
    await Promise.all([0, 1].map((r) =>
      batchDecoderFor(m)!.run({
        promptIds: r ? ids.map((x) => (x + 5) % config.vocab_size) : ids,
        maxNew: steps,
        processors: [],
        onToken: (tok) => (tokens[r]!.push(tok), false),
        signal: new AbortController().signal,
      })
    ));
    assert.deepEqual(tokens, await greedyWhole(whole, steps));
    await whole.release();
  });
});
