/**
 * Attention reading the past and the new positions apart, the whole cache only on demand
 * (src/services/inference/past-and-new.ts). The judges are the decoder as torch exported it, run by ONNX
 * Runtime (its logits and its `present.*`), and torch's own reference logits.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { rewriteDecoder } from '../../../src/services/inference/decoder-graph.ts';
import { loadModel } from '../../../src/services/inference/load.ts';
import { PRESENT_SWITCH } from '../../../src/services/inference/past-and-new.ts';
import { decodeFields, first, indexGraph, ONNX } from '../../../src/services/models/onnx-wire.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { maxDiff, REF } from './reference.ts';

const config = JSON.parse(readFileSync(join(TINY_LLAMA, 'config.json'), 'utf8'));
const shape = { heads: config.num_attention_heads, kvHeads: config.num_key_value_heads, headDim: config.head_dim };
const layers: number = config.num_hidden_layers;
const [kvHeads, headDim] = [shape.kvHeads as number, shape.headDim as number];
const original = new Uint8Array(readFileSync(join(TINY_LLAMA, 'onnx', 'model.onnx')));
const opts = { intraOpNumThreads: 1, logSeverityLevel: 3 } as const;
const i64 = (xs: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), dims);
const on = (v: boolean) => ({ [PRESENT_SWITCH]: new ort.Tensor('bool', [v], []) });
const names = (kind: string) => Array.from({ length: layers }, (_, l) => ['key', 'value'].map((kv) => `${kind}.${l}.${kv}`)).flat();

/** Two rows, the second left-padded by 2: the reference prompt, then `steps` tokens. */
const ROWS = [REF.generate.prompt_ids, [0, 0, ...REF.generate.prompt_ids.slice(0, -2)]];
const PADS = [0, 2];
const L = ROWS[0]!.length;
const maskOf = (len: number, cap = len) => PADS.flatMap((p) => Array.from({ length: cap }, (_, j) => (j < p || j >= len ? 0 : 1)));
const stepIds = (step: number) => i64([7 + step, 11 + step], [2, 1]);
const prompt = () => ({
  input_ids: i64(ROWS.flat(), [2, L]),
  attention_mask: i64(maskOf(L), [2, L]),
  position_ids: i64(PADS.flatMap((p) => Array.from({ length: L }, (_, j) => Math.max(0, j - p))), [2, L]),
  num_logits_to_keep: i64([1], []),
  ...Object.fromEntries(names('past_key_values').map((n) => [n, new ort.Tensor('float32', new Float32Array(0), [2, kvHeads, 0, headDim])])),
});

/** Prefill and `steps` decode steps feeding each call's `present.*` back (how the graph was exported to run). */
async function decodeConcatenating(s: ort.InferenceSession, steps: number, extra = {}) {
  const feeds: Record<string, ort.Tensor> = { ...prompt(), ...extra };
  const logits: Float32Array[] = [];
  let last: ort.InferenceSession.OnnxValueMapType = {};
  for (let step = 0, len = L; step <= steps; step++, len++) {
    last = await s.run(feeds);
    logits.push(last.logits!.data as Float32Array);
    for (const n of names('past_key_values')) feeds[n] = last[n.replace('past_key_values.', 'present.')]!;
    feeds.input_ids = stepIds(step);
    feeds.attention_mask = i64(maskOf(len + 1), [2, len + 1]);
    feeds.position_ids = i64(PADS.map((p) => len - p), [2, 1]);
  }
  return { logits, last };
}

/**
 * The batch decoder's way: the cache kept in place at a fixed capacity (positions past its length masked),
 * each call fetching only `new_key_values.*` and writing them in, `present.*` switched off.
 */
async function decodeInPlace(s: ort.InferenceSession, steps: number) {
  const cap = L + steps + 3;
  const cache = new Map(names('past_key_values').map((n) => [n, new Float32Array(2 * kvHeads * cap * headDim)]));
  const write = (name: string, t: ort.Tensor, at: number) => {
    const [, , q] = t.dims as number[];
    const data = t.data as Float32Array;
    for (let r = 0; r < 2 * kvHeads; r++) {
      cache.get(name)!.set(data.subarray(r * q! * headDim, (r + 1) * q! * headDim), (r * cap + at) * headDim);
    }
  };
  const logits: Float32Array[] = [];
  const presentSizes: number[] = [];
  const take = (out: ort.InferenceSession.OnnxValueMapType, at: number) => {
    logits.push(out.logits!.data as Float32Array);
    presentSizes.push(...names('present').map((n) => out[n]!.size));
    for (const n of names('past_key_values')) write(n, out[n.replace('past_key_values.', 'new_key_values.')]!, at);
  };
  take(await s.run({ ...prompt(), ...on(false) }), 0);
  for (let step = 0, len = L; step < steps; step++, len++) {
    const feeds: Record<string, ort.Tensor> = {
      input_ids: stepIds(step),
      // the whole capacity (what is past this length masked), then the new position
      attention_mask: i64([0, 1].flatMap((r) => [...maskOf(len).slice(r * len, (r + 1) * len), ...Array(cap - len).fill(0), 1]), [
        2,
        cap + 1,
      ]),
      position_ids: i64(PADS.map((p) => len - p), [2, 1]),
      num_logits_to_keep: i64([1], []),
      ...on(false),
    };
    for (const n of names('past_key_values')) feeds[n] = new ort.Tensor('float32', cache.get(n)!, [2, kvHeads, cap, headDim]);
    take(await s.run(feeds), len);
  }
  return { logits, presentSizes };
}

const opTypesReading = (model: Uint8Array, input: RegExp) => {
  const graph = decodeFields(first(decodeFields(model), ONNX.model.graph)!.bytes!);
  return indexGraph(graph).nodes.filter((n) => n.inputs.some((i) => input.test(i))).map((n) => n.opType);
};

describe('the tiny-llama decoder (torch export)', () => {
  const rewritten = rewriteDecoder(original, shape, { pastAndNew: true })!;
  const sessions: ort.InferenceSession[] = [];
  after(() => Promise.all(sessions.map((s) => s.release())));
  const open = async (bytes: Uint8Array) => {
    const s = await ort.InferenceSession.create(bytes, opts);
    sessions.push(s);
    return s;
  };

  test('every layer is rewritten: no node of the main graph concatenates a past any more', () => {
    assert.equal(rewritten.pastAndNew, layers);
    assert.ok(opTypesReading(original, /^past_key_values\./).includes('Concat'));
    assert.ok(
      !opTypesReading(rewritten.bytes, /^past_key_values\./).includes('Concat'),
      `${opTypesReading(rewritten.bytes, /^past_key_values\./)}`,
    );
    // not asked for (the WebGPU path), and without the in-place outputs it is for: the graph keeps its concatenations
    assert.equal(rewriteDecoder(original, shape)!.pastAndNew, 0);
    assert.equal(rewriteDecoder(original, shape, { pastAndNew: true, newKeyValues: false })!.pastAndNew, 0);
  });

  test("switched on, prefill and decode steps give the exported graph's logits and its whole cache", async () => {
    const [want, got] = [
      await decodeConcatenating(await open(original), 4),
      await decodeConcatenating(await open(rewritten.bytes), 4, on(true)),
    ];
    assert.ok(maxDiff(Array.from(got.logits[0]!.subarray(0, REF.generate.last_logits.length)), REF.generate.last_logits) < 1e-3);
    want.logits.forEach((w, i) => assert.ok(maxDiff(Array.from(got.logits[i]!), Array.from(w)) < 1e-5, `call ${i}`));
    for (const n of names('present')) {
      assert.deepEqual(got.last[n]!.dims, want.last[n]!.dims);
      assert.ok(maxDiff(Array.from(got.last[n]!.data as Float32Array), Array.from(want.last[n]!.data as Float32Array)) < 1e-5, n);
    }
  });

  test('switched off, a cache kept in place at a fixed capacity gives the same logits, and no present is made', async () => {
    const want = await decodeConcatenating(await open(original), 4);
    const got = await decodeInPlace(await open(rewritten.bytes), 4);
    want.logits.forEach((w, i) =>
      assert.ok(
        maxDiff(Array.from(got.logits[i]!), Array.from(w)) < 1e-5,
        `call ${i}: ${maxDiff(Array.from(got.logits[i]!), Array.from(w))}`,
      )
    );
    assert.deepEqual([...new Set(got.presentSizes)], [0]);
  });

  test('without the switch fed, the session refuses the call (callers go through the inference thread, which feeds it)', async () => {
    await assert.rejects((await open(rewritten.bytes)).run(prompt()), /svc_present/);
  });
});

describe('loaded as a model', () => {
  const loaded: { dispose(): Promise<void> }[] = [];
  after(() => Promise.all(loaded.map((m) => m.dispose())));
  const editsOf = (m: unknown) =>
    (m as { model: { sessions: { model: { edits: { pastAndNew: number }; inputNames: string[] } } } }).model.sessions.model;

  // (on WASM: test/services/inference/wasm-thread.test.ts; one process binds one backend)
  for (const backend of ['cpu'] as const) {
    test(`${backend}: the decoder session reads past and new apart; callers never see the switch; greedy text is torch's`, async () => {
      const m = await loadModel(TINY_LLAMA, 'text-generation', { backend, dtype: 'fp32' });
      loaded.push(m);
      const s = editsOf(m);
      assert.equal(s.edits.pastAndNew, layers);
      assert.ok(!s.inputNames.includes(PRESENT_SWITCH));
      // transformers.js' own loop: every call fetches the whole cache (the switch on)
      const ids = REF.generate.prompt_ids;
      const t = (xs: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
      const n = REF.generate.greedy_ids.length;
      const gen = (await m.model.generate(
        { input_ids: t(ids), attention_mask: t(ids.map(() => 1)), max_new_tokens: n, min_new_tokens: n, do_sample: false } as never,
      )) as { tolist(): bigint[][] };
      assert.deepEqual(gen.tolist()[0]!.slice(ids.length).map(Number), REF.generate.greedy_ids);
    });
  }
});
