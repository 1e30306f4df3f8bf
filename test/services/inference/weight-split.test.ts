/**
 * A decoder graph cut around its 4-bit MLPs and LM head (src/services/inference/weight-split.ts) and run as
 * one session (src/services/inference/split-session.ts). The judge is ONNX Runtime running the graph whole: for
 * 8-bit products a position at a time (svc's kernels quantize each position's activations by itself, where the
 * graph's DynamicQuantizeLinear takes a run's together).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { decoderShape, rewriteDecoder } from '../../../src/services/inference/decoder-graph.ts';
import { withInt8Activations } from '../../../src/services/inference/nbits-accuracy.ts';
import { PRESENT_SWITCH } from '../../../src/services/inference/past-and-new.ts';
import { SplitSession } from '../../../src/services/inference/split-session.ts';
import { splitAtWeights } from '../../../src/services/inference/weight-split.ts';
import { attentionOf } from '../../../src/services/inference/attention-stage.ts';
import { indexGraph, modelGraph } from '../../../src/services/models/onnx-wire.ts';
import { unsignedJudge } from '../../support/unsigned-judge.ts';
import { nativeKernels } from '../../../src/runtime/kernels.ts';
import { externalBytes } from '../../../src/services/models/onnx-file.ts';
import { wasmKernels, wasmKernelsUnavailable } from '../../../src/runtime/wasm-kernels.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { REF } from './reference.ts';
import { config, emptyPast, i64, layers, relMax } from './tiny-llama-feeds.ts';
import { cutLmHead } from '../../../src/services/inference/lm-head.ts';
import { quantizeOnnx } from '../../../src/services/models/onnx-quantize.ts';

/** Every MatMulNBits of a model set to accuracy_level 1 (float activations), by the `onnx` package. */
const LEVEL_1 = `
import sys, onnx
from onnx import helper
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    if n.op_type == 'MatMulNBits':
        for a in list(n.attribute):
            if a.name == 'accuracy_level': n.attribute.remove(a)
        n.attribute.append(helper.make_attribute('accuracy_level', 1))
onnx.save(m, sys.argv[2])
`;

const file = (name: string) => new Uint8Array(readFileSync(join(TINY_LLAMA, 'onnx', name)));
const opts = { intraOpNumThreads: 1, logSeverityLevel: 3 } as const;
// the q4 and q8 graphs as a native CPU session gets them: the decoder rewrites (the present switch among them),
// level 4
const rewritten = rewriteDecoder(file('model_q4.onnx'), decoderShape(config)!, { pastAndNew: true })!.bytes;
const q4 = withInt8Activations(rewritten)?.bytes ?? rewritten;
const q8 = rewriteDecoder(file('model_quantized.onnx'), decoderShape(config)!, { pastAndNew: true })!.bytes;
/**
 * The largest difference from ONNX Runtime's outputs allowed, of their largest magnitude. q4: ONNX Runtime adds a
 * product's blocks in another order, and rarely an int8 code of the MLP's hidden values lands one step apart
 * (BENCHMARKS.md, "own 4-bit MLP"). q8: the integer sums are exact; ONNX Runtime fuses a residual sum into the
 * next norm and the attention's softmax sums in another order, float rounding apart.
 */
const TOLERANCE = { q4: 5e-4, q8: 1e-5 };
/** On the WASM kernels, whose float steps are not fused (their norms' sums of squares, a 4-bit block's sum). */
const TOLERANCE_WASM = { q4: 5e-4, q8: 1e-5 };

type Feeds = Record<string, InstanceType<typeof ort.Tensor>>;

/** Row r of a tensor whose first dimension is the batch of `rows`. */
function rowOf(t: InstanceType<typeof ort.Tensor>, r: number, rows: number): InstanceType<typeof ort.Tensor> {
  const per = t.size / rows, data = t.data as Float32Array;
  return new ort.Tensor('float32', data.slice(r * per, (r + 1) * per), [1, ...t.dims.slice(1)]);
}

/**
 * ONNX Runtime's outputs for `feeds` (rows of n new positions on a past) taken a row and a position at a time,
 * each run on the past the one before left: every run quantizes one position's activations, as svc's 8-bit
 * kernels do (the graph's DynamicQuantizeLinear takes all of a run's together). The logits of every position
 * (or the last `num_logits_to_keep`), each layer's present, joined again along the batch.
 */
async function positionByPosition(s: ort.InferenceSession, feeds: Feeds, fetch?: Record<string, null>): Promise<Feeds> {
  const [rows, n] = feeds.input_ids!.dims as [number, number];
  const ids = feeds.input_ids!.data as BigInt64Array, pos = feeds.position_ids!.data as BigInt64Array;
  const mask = feeds.attention_mask!.data as BigInt64Array, total = feeds.attention_mask!.dims[1]!, pastLen = total - n;
  const keep = Number((feeds.num_logits_to_keep!.data as BigInt64Array)[0]) || n;
  const pastNames = Object.keys(feeds).filter((k) => k.startsWith('past_key_values.'));
  const logits: Float32Array[] = [], presents: Feeds[] = [];
  for (let r = 0; r < rows; r++) {
    let past: Feeds = Object.fromEntries(pastNames.map((name) => [name, rowOf(feeds[name]!, r, rows)]));
    for (let j = 0; j < n; j++) {
      const out = await s.run({
        input_ids: i64([Number(ids[r * n + j])], [1, 1]),
        attention_mask: i64([...mask.subarray(r * total, r * total + pastLen + j + 1)].map(Number), [1, pastLen + j + 1]),
        position_ids: i64([Number(pos[r * n + j])], [1, 1]),
        num_logits_to_keep: i64([0], []),
        [PRESENT_SWITCH]: new ort.Tensor('bool', [true], []),
        ...past,
      });
      if (j >= n - keep) logits.push(out.logits!.data as Float32Array);
      past = Object.fromEntries(pastNames.map((name) => [name, out[name.replace('past_key_values', 'present')]!]));
      if (j === n - 1) presents.push(past);
    }
  }
  const joined = (parts: Float32Array[], dims: number[]) => {
    const data = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    parts.reduce((at, p) => (data.set(p, at), at + p.length), 0);
    return new ort.Tensor('float32', data, dims);
  };
  const out: Feeds = { logits: joined(logits, [rows, keep, config.vocab_size]) };
  for (const name of pastNames) {
    const parts = presents.map((p) => p[name]!), [, heads, , d] = parts[0]!.dims as [number, number, number, number];
    out[name.replace('past_key_values', 'present')] = joined(parts.map((p) => p.data as Float32Array), [rows, heads, total, d]);
    // the new positions' keys or values: the last n of each head's
    const news = parts.flatMap((p) =>
      Array.from({ length: heads }, (_, h) => (p.data as Float32Array).subarray((h * total + pastLen) * d, (h + 1) * total * d))
    );
    out[name.replace('past_key_values', 'new_key_values')] = joined(news, [rows, heads, n, d]);
  }
  return fetch ? Object.fromEntries(Object.keys(fetch).map((name) => [name, out[name]!])) : out;
}

/**
 * An output's values with the positions the mask hides set to 0 (a copy): what a padding position computes is
 * read by nothing (each later position leaves it out), and run a position at a time it sees other positions than
 * in one run. Logits [rows, kept, vocab] are the last of the feeds' new positions, caches [rows, heads, positions,
 * size] all of a row's (present) or its new ones.
 */
function unpadded(name: string, t: InstanceType<typeof ort.Tensor>, feeds: Feeds): Float32Array {
  const [rows, n] = feeds.input_ids!.dims as [number, number];
  const mask = feeds.attention_mask!.data as BigInt64Array, total = feeds.attention_mask!.dims[1]!;
  const data = Float32Array.from(t.data as Float32Array);
  const hidden = (r: number, p: number) => mask[r * total + p] === 0n;
  if (name === 'logits') {
    const [, kept, v] = t.dims as [number, number, number];
    for (let r = 0; r < rows; r++) {
      for (let j = 0; j < kept; j++) if (hidden(r, total - kept + j)) data.fill(0, ((r * kept) + j) * v, ((r * kept) + j + 1) * v);
    }
    return data;
  }
  const [, heads, positions, d] = t.dims as [number, number, number, number], first = positions === n ? total - n : 0;
  for (let r = 0; r < rows; r++) {
    for (let h = 0; h < heads; h++) {
      for (let p = 0; p < positions; p++) {
        const at = ((r * heads + h) * positions + p) * d;
        if (hidden(r, first + p)) data.fill(0, at, at + d);
      }
    }
  }
  return data;
}

/** Two rows, the second left-padded by 2, every position's logits, the whole cache fetched. */
function prefill() {
  const ids = REF.generate.prompt_ids;
  const L = ids.length;
  return {
    input_ids: i64([...ids, 0, 0, ...ids.slice(0, -2)], [2, L]),
    attention_mask: i64([...Array(L).fill(1), 0, 0, ...Array(L - 2).fill(1)], [2, L]),
    position_ids: i64([...ids.keys(), 0, 0, ...[...ids.keys()].slice(0, -2)], [2, L]),
    num_logits_to_keep: i64([0], []),
    [PRESENT_SWITCH]: new ort.Tensor('bool', [true], []),
    ...emptyPast(2),
  };
}

/**
 * A decode step of n new positions a row after prefill()'s prompt (the second row left-padded by 2), on `cache`'s
 * present values, the logits of the last `keep` positions (0: all).
 */
function decodeStep(cache: Record<string, InstanceType<typeof ort.Tensor>>, n: number, keep = 0) {
  const L = REF.generate.prompt_ids.length;
  return {
    input_ids: i64(Array.from({ length: 2 * n }, (_, i) => 17 + 29 * i), [2, n]),
    attention_mask: i64([...Array(L + n).fill(1), 0, 0, ...Array(L - 2 + n).fill(1)], [2, L + n]),
    position_ids: i64([...Array(n).keys()].flatMap((j) => [L + j]).concat([...Array(n).keys()].map((j) => L - 2 + j)), [2, n]),
    num_logits_to_keep: i64([keep], []),
    [PRESENT_SWITCH]: new ort.Tensor('bool', [false], []),
    ...Object.fromEntries(
      Array.from({ length: layers }, (_, l) => ['key', 'value'].map((kv) => [`past_key_values.${l}.${kv}`, cache[`present.${l}.${kv}`]!]))
        .flat(),
    ),
  };
}

for (const [dtype, graph] of [['q4', q4], ['q8', q8]] as const) {
  describe(`a decoder cut around its ${dtype} products`, () => {
    const split = splitAtWeights(graph)!;
    // ONNX Runtime's whole graph, the reference, with uint8 weights: as it computes them exactly on every x64 CPU
    // (../../support/unsigned-judge.ts)
    const judge = unsignedJudge(graph);
    /** The judge's outputs: 8-bit products quantize each position by itself, so the judge takes one at a time. */
    const judged = (whole: ort.InferenceSession, feeds: Feeds, fetch?: Record<string, null>) =>
      dtype === 'q8' ? positionByPosition(whole, feeds, fetch) : fetch ? whole.run(feeds, fetch as never) : whole.run(feeds);
    /** The largest difference from the judge's output `name` (for q8 at the positions the mask shows: see unpadded). */
    const errOf = (name: string, got: InstanceType<typeof ort.Tensor>, want: InstanceType<typeof ort.Tensor>, feeds: Feeds) =>
      dtype === 'q8'
        ? relMax(unpadded(name, got, feeds), unpadded(name, want, feeds))
        : relMax(got.data as Float32Array, want.data as Float32Array);

    test("each layer's graph stage is its attention; its products, sums, norms and MLP are kernel calls", () => {
      assert.ok(split);
      const kinds = split.stages.map((s) => (s.kind === 'graph' ? 'graph' : s.calls.map((c) => c.kind).join('+')));
      const layer = ['product', 'add', 'rmsNorm', 'mlp', 'add'];
      assert.deepEqual(kinds, [
        'graph', // the embedding, the first layer's norm, and what every layer's attention reads (mask, rotary rows)
        'product+product+product', // its queries, keys and values (their biases added)
        ...Array.from({ length: layers }, (_, l) => [
          'graph',
          // after the last layer, the positions num_logits_to_keep keeps, the last norm and the head
          [...layer, ...(l < layers - 1 ? ['rmsNorm', 'product', 'product', 'product'] : ['lastPositions', 'rmsNorm', 'product'])].join(
            '+',
          ),
        ]).flat(),
        'graph', // the present switch: the whole cache, for a call that fetches it
      ]);
      // every layer's stage is an attention the kernel runs, reading its own layer's cache: the mask and the rotary
      // rows they share are made in the first stage, from the graph's inputs
      const attentions = split.stages.flatMap((s) => (s.kind === 'graph' ? [attentionOf(s.model, s.inputs, s.outputs)] : []));
      const every = Array.from({ length: layers }, (_, l) => `past_key_values.${l}.key`);
      // the embedding's stage, the layers', the switch's
      assert.deepEqual(attentions.map((a) => a?.pastKey), [undefined, ...every, undefined]);
      assert.deepEqual(
        attentions.filter(Boolean).map((a) => [a!.heads, a!.kvHeads, a!.headSize, a!.divisor]),
        Array(layers).fill([
          config.num_attention_heads,
          config.num_key_value_heads,
          config.head_dim,
          Math.fround(Math.sqrt(config.head_dim)),
        ]),
      );
      // no product (nor what quantizes its input) and no norm is left to ONNX Runtime but the first
      const left = split.stages.flatMap((s) => (s.kind === 'graph' ? indexGraph(modelGraph(s.model)!.graph).nodes : []));
      const products = ['MatMulNBits', 'MatMulInteger', 'DynamicQuantizeLinear'];
      assert.deepEqual(left.filter((n) => products.includes(n.opType)).map((n) => n.opType), []);
      const calls = split.stages.flatMap((s) => (s.kind === 'kernels' ? s.calls : []));
      const bits = calls.flatMap((
        c,
      ) => (c.kind === 'product' ? [c.product.bits] : c.kind === 'mlp' ? [c.mlp.gate.bits, c.mlp.up.bits, c.mlp.down.bits] : []));
      assert.deepEqual(new Set(bits), new Set([dtype === 'q4' ? 4 : 8]));
      assert.equal(left.filter((n) => n.opType === 'Pow').length, 1);
      assert.deepEqual(split.inputs.includes(PRESENT_SWITCH), true);
      assert.deepEqual(split.metadata.inputs.find((m) => m.name === 'past_key_values.0.key')!.shape, [
        'batch_size',
        config.num_key_value_heads,
        'past_sequence_length',
        config.head_dim,
      ]);
    });

    test("each layer's stage reads its own past itself: nothing made from the cache crosses between stages", () => {
      const graphs = split.stages.filter((s) => s.kind === 'graph');
      // the stage with the switch that concatenates the whole cache when a call asks for it (./past-and-new.ts)
      const withIf = graphs.findIndex((s) => indexGraph(modelGraph(s.model)!.graph).nodes.some((n) => n.opType === 'If'));
      const own: number[] = [];
      for (let l = 0; l < layers; l++) {
        const readers = graphs.flatMap((s, i) => (s.inputs.includes(`past_key_values.${l}.key`) ? [i] : []));
        // layer l's attention, and the switch
        own.push(readers[0]!);
        assert.deepEqual(readers, [...new Set([readers[0]!, withIf])], `past_key_values.${l}.key is read by stages ${readers}`);
      }
      assert.deepEqual(own, [...own].sort((a, b) => a - b), 'each layer in its own stage, in order');
      assert.equal(new Set(own).size, layers);
      // a stage hands on only what its own nodes made from the stages before (the first: from the graph's inputs);
      // a layer's past keys transposed in the first stage crossed to every layer before (the whole cache, each step)
      const made = graphs.map((s) => new Set(indexGraph(modelGraph(s.model)!.graph).nodes.flatMap((n) => n.outputs)));
      const past = graphs[0]!.outputs.filter((x) => /past/.test(x));
      assert.deepEqual(past, [], 'the first stage hands on values made from the cache');
      assert.ok(made.every((m, i) => graphs[i]!.outputs.every((x) => m.has(x))));
    });

    test("on onnxruntime-web with svc's WASM kernels, a prefill and a decode step give ONNX Runtime's logits and cache", async () => {
      const kernels = wasmKernels();
      assert.ok(kernels, `the WASM kernels load: ${wasmKernelsUnavailable()}`);
      const web = await import('onnxruntime-web');
      web.env.wasm.numThreads = 1;
      const onWeb = (feeds: Record<string, InstanceType<typeof ort.Tensor>>) =>
        Object.fromEntries(Object.entries(feeds).map(([k, t]) => [k, new web.Tensor(t.type as never, t.data as never, t.dims)]));
      const opts = { intraOpNumThreads: 1, logSeverityLevel: 3 } as const;
      const whole = await ort.InferenceSession.create(judge, opts);
      let calls = 0;
      const counted = { ...kernels, attention: (...a: Parameters<typeof kernels.attention>) => (calls++, kernels.attention(...a)) };
      const s = await SplitSession.create(web as never, counted, split, opts, false);
      const want = await judged(whole, prefill());
      const got = await s.run(onWeb(prefill()) as never);
      for (const name of whole.outputNames) {
        const err = errOf(name, got[name]!, want[name]!, prefill());
        assert.ok(err < TOLERANCE_WASM[dtype], `${name}: ${err}`);
      }
      // one new position a row after the prompt, the cache as the prefill left it
      const step = decodeStep(want, 1);
      const names = whole.outputNames.filter((x) => !x.startsWith('present'));
      const fetch = Object.fromEntries(names.map((x) => [x, null]));
      calls = 0;
      const gotStep = await s.run(onWeb(step) as never, fetch as never);
      assert.equal(calls, layers, 'attentions on the kernel');
      const wantStep = await judged(whole, step, fetch);
      for (const name of names) {
        const err = errOf(name, gotStep[name]!, wantStep[name]!, step);
        assert.ok(err < TOLERANCE_WASM[dtype], `step ${name}: ${err}`);
      }
      await whole.release();
      await s.release();
    });

    for (const threads of [1, 2]) {
      const opts = { intraOpNumThreads: threads, logSeverityLevel: 3 } as const;
      test(`run as one session on ${threads} thread(s), it gives ONNX Runtime's logits and cache (every position, two rows, one padded)`, async () => {
        const kernels = nativeKernels();
        assert.ok(kernels, 'the native kernels are built (npm run build:native)');
        const whole = await ort.InferenceSession.create(judge, opts);
        const s = await SplitSession.create(ort as never, kernels, split, opts);
        // the embedding's, each layer's attention, the present switch; q, k, v, o a layer and the head, a layer's
        // q, k and v in one call; 2 sums and 2 norms a layer (the first's first norm in the embedding's stage, the
        // last norm after the layers) and the positions kept; every layer's attention
        assert.deepEqual(s.stages, {
          graphs: layers + 2,
          mlps: layers,
          products: 4 * layers + 1,
          joined: layers,
          steps: 4 * layers + 1,
          attentions: layers,
        });
        const want = await judged(whole, prefill());
        const got = await s.run(prefill() as never);
        for (const name of whole.outputNames) {
          assert.deepEqual(got[name]!.dims, want[name]!.dims, name);
          const err = errOf(name, got[name]!, want[name]!, prefill());
          assert.ok(err < TOLERANCE[dtype], `${name}: ${err}`);
        }
        // outputs handed in are written into, the others not fetched
        const logits = new ort.Tensor('float32', new Float32Array(want.logits!.size), want.logits!.dims);
        const only = await s.run(prefill() as never, { logits } as never);
        assert.deepEqual(Object.keys(only), ['logits']);
        assert.equal(only.logits!.data, logits.data);
        assert.ok(errOf('logits', logits, want.logits!, prefill()) < TOLERANCE[dtype]);
        await whole.release();
        await s.release();
      });

      test(`decode steps on ${threads} thread(s) (1 and 3 new positions, two rows, one padded; every position's logits, the last one's, the last two's) run each layer's attention on the kernel, with ONNX Runtime's logits`, async () => {
        const kernels = nativeKernels();
        assert.ok(kernels, 'the native kernels are built (npm run build:native)');
        const whole = await ort.InferenceSession.create(judge, opts);
        let calls = 0;
        const counted = { ...kernels, attention: (...a: Parameters<typeof kernels.attention>) => (calls++, kernels.attention(...a)) };
        const s = await SplitSession.create(ort as never, counted, split, opts);
        const cache = await whole.run(prefill());
        for (const [n, keep] of [[1, 0], [3, 0], [3, 1], [3, 2]] as const) {
          const feeds = decodeStep(cache, n, keep);
          const names = whole.outputNames.filter((x) => !x.startsWith('present'));
          const fetch = Object.fromEntries(names.map((x) => [x, null]));
          calls = 0;
          const got = await s.run(feeds as never, fetch as never);
          assert.equal(calls, layers, `${n} new, keep ${keep}: attentions on the kernel`);
          const want = await judged(whole, feeds, fetch);
          for (const name of names) {
            assert.deepEqual(got[name]!.dims, want[name]!.dims, name);
            const err = errOf(name, got[name]!, want[name]!, feeds);
            assert.ok(err < TOLERANCE[dtype], `${n} new, keep ${keep}, ${name}: ${err}`);
          }
        }
        await whole.release();
        await s.release();
      });
    }
  });
}

describe('a decoder cut around its 4-bit MLPs and head', () => {
  const split = splitAtWeights(q4)!;

  test('graphs without a weight product the kernels run stay whole (fp32)', () => {
    assert.equal(splitAtWeights(file('model.onnx')), undefined);
  });

  test('4-bit products that ask for float activations (accuracy_level 1) stay with ONNX Runtime, the head too', () => {
    const dir = mkdtempSync(join(tmpdir(), 'split-level-'));
    try {
      const out = join(dir, 'level1.onnx');
      execFileSync('/usr/bin/python3', ['-c', LEVEL_1, join(TINY_LLAMA, 'onnx', 'model_q4.onnx'), out]);
      const level1 = new Uint8Array(readFileSync(out));
      assert.equal(splitAtWeights(level1), undefined);
      assert.equal(cutLmHead(level1), undefined);
      // the same graph at level 4 is cut
      assert.ok(cutLmHead(file('model_q4.onnx')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("svc's own q4 (every scale a half, as Q4_0): its products read halves, with ONNX Runtime's logits", async () => {
    const kernels = nativeKernels();
    assert.ok(kernels, 'the native kernels are built (npm run build:native)');
    const own = (await quantizeOnnx(file('model.onnx'), 'q4', { dir: join(TINY_LLAMA, 'onnx') })).bytes;
    const graph = rewriteDecoder(own, decoderShape(config)!, { pastAndNew: true })!.bytes;
    const leveled = withInt8Activations(graph)?.bytes ?? graph;
    const perBlock: number[] = [];
    const counted = {
      ...kernels,
      packQ4: (...a: Parameters<typeof kernels.packQ4>) => {
        const w = kernels.packQ4(...a);
        perBlock.push(w.bytes / ((Math.ceil(w.n / 16) * 16 * w.k) / 32));
        return w;
      },
    };
    const whole = await ort.InferenceSession.create(leveled, opts);
    const s = await SplitSession.create(ort as never, counted, splitAtWeights(leveled)!, opts);
    assert.equal(perBlock.length, 5 * layers + 1, 'q, k and v joined, o, gate, up, down a layer and the head');
    assert.deepEqual(new Set(perBlock), new Set([18]), '16 bytes of codes and a half a block');
    const want = await whole.run(prefill());
    const got = await s.run(prefill() as never);
    for (const name of whole.outputNames) {
      const err = relMax(got[name]!.data as Float32Array, want[name]!.data as Float32Array);
      assert.ok(err < 5e-4, `${name}: ${err}`);
    }
    await whole.release();
    await s.release();
  });

  test('runs with the same shapes reuse what passes between stages, never what they hand back', async () => {
    const kernels = nativeKernels();
    assert.ok(kernels, 'the native kernels are built (npm run build:native)');
    const whole = await ort.InferenceSession.create(q4, opts);
    const s = await SplitSession.create(ort as never, kernels, split, opts);
    // the same shapes, other tokens: the second run writes into the first one's buffers between stages
    const feeds = [prefill(), prefill()];
    const ids = feeds[1]!.input_ids.data as BigInt64Array;
    ids.forEach((x, i) => (ids[i] = (x + 7n) % BigInt(config.vocab_size)));
    const got = [];
    for (const f of feeds) got.push(await s.run(f as never));
    // one set of buffers, made by the first run and written by the second
    assert.equal((s as unknown as { scratch: Map<string, unknown> }).scratch.size, 1);
    // the first run's outputs are still its own after the second
    for (const [i, f] of feeds.entries()) {
      const want = await whole.run(f);
      for (const name of whole.outputNames) {
        const err = relMax(got[i]![name]!.data as Float32Array, want[name]!.data as Float32Array);
        assert.ok(err < 5e-4, `run ${i} ${name}: ${err}`);
      }
    }
    await whole.release();
    await s.release();
  });

  test("a lone row's decode steps (token and position [1, 1], other values each step) reuse one set", async () => {
    const kernels = nativeKernels();
    assert.ok(kernels, 'the native kernels are built (npm run build:native)');
    const whole = await ort.InferenceSession.create(q4, opts);
    const s = await SplitSession.create(ort as never, kernels, split, opts);
    const ids = REF.generate.prompt_ids, L = ids.length;
    const cache = await whole.run({
      input_ids: i64(ids, [1, L]),
      attention_mask: i64(Array(L).fill(1), [1, L]),
      position_ids: i64([...ids.keys()], [1, L]),
      num_logits_to_keep: i64([1], []),
      [PRESENT_SWITCH]: new ort.Tensor('bool', [true], []),
      ...emptyPast(1),
    });
    const step = (token: number) => ({
      input_ids: i64([token], [1, 1]),
      attention_mask: i64(Array(L + 1).fill(1), [1, L + 1]),
      position_ids: i64([L], [1, 1]),
      num_logits_to_keep: i64([1], []),
      [PRESENT_SWITCH]: new ort.Tensor('bool', [false], []),
      ...Object.fromEntries(
        Array.from({ length: layers }, (_, l) => ['key', 'value'].map((kv) => [`past_key_values.${l}.${kv}`, cache[`present.${l}.${kv}`]!]))
          .flat(),
      ),
    });
    for (const token of [17, 46, 75]) {
      const got = await s.run(step(token) as never), want = await whole.run(step(token));
      for (const name of whole.outputNames) {
        const err = relMax(got[name]!.data as Float32Array, want[name]!.data as Float32Array);
        assert.deepEqual(got[name]!.dims, want[name]!.dims, name);
        // with the present switch off, the whole caches are not made: empty
        if (want[name]!.size) assert.ok(err < 5e-4, `token ${token} ${name}: ${err}`);
      }
    }
    // the steps' buffers, made by the first and written by the others
    assert.equal((s as unknown as { scratch: Map<string, unknown> }).scratch.size, 1);
    await whole.release();
    await s.release();
  });
});

describe('8-bit products with uint8 weights (as ./int8-weights.ts makes them on x64 without VNNI)', () => {
  /** Every 8-bit product a cut hands to the kernels, in order. */
  const products8 = (split: ReturnType<typeof splitAtWeights>) => {
    const found: { w: Int8Array; scales: Float32Array; zeroPoint: number; k: number; n: number }[] = [];
    const seen = new Set<object>();
    const walk = (v: unknown) => {
      if (!v || typeof v !== 'object' || seen.has(v) || ArrayBuffer.isView(v)) return;
      seen.add(v);
      const p = v as { bits?: number; w?: unknown };
      if (p.bits === 8 && p.w instanceof Int8Array) found.push(v as (typeof found)[number]);
      else for (const x of Object.values(v)) walk(x);
    };
    walk(split?.stages ?? []);
    return found;
  };

  test("are the int8 file's calls, each weight and zero point 128 lower; those whose weights would leave int8 stay whole", () => {
    const dir = mkdtempSync(join(tmpdir(), 'split-uint8-'));
    try {
      writeFileSync(join(dir, 'int8.onnx'), q8);
      // the onnx package's rewrite: each weight and zero point moved up by 128 (128 added where none was)
      execFileSync('/usr/bin/python3', ['scripts/models/q8-unsigned.py', join(dir, 'int8.onnx'), join(dir, 'uint8.onnx')]);
      // and without zero points: uint8's default is 0, so W + 128 - 0 reaches 255
      execFileSync('/usr/bin/python3', [
        'scripts/models/q8-unsigned.py',
        join(dir, 'int8.onnx'),
        join(dir, 'no-zp.onnx'),
        '--no-zero-points',
      ]);
      const want = products8(splitAtWeights(q8));
      const got = products8(splitAtWeights(new Uint8Array(readFileSync(join(dir, 'uint8.onnx')))));
      assert.ok(want.length > 0);
      assert.equal(got.length, want.length);
      for (const [i, p] of got.entries()) {
        assert.deepEqual([p.k, p.n, p.zeroPoint], [want[i]!.k, want[i]!.n, want[i]!.zeroPoint], `product ${i}`);
        assert.deepEqual(p.w, want[i]!.w, `product ${i}: weights`);
        assert.deepEqual(p.scales, want[i]!.scales, `product ${i}: scales`);
      }
      assert.equal(products8(splitAtWeights(new Uint8Array(readFileSync(join(dir, 'no-zp.onnx'))))).length, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('weights read from the file', () => {
  /** Every product a cut hands the kernels, weights and all, in order. */
  const productsOf = (s: NonNullable<ReturnType<typeof splitAtWeights>>) =>
    s.stages.flatMap((x) => (x.kind === 'kernels' ? x.calls : [])).flatMap((c) =>
      c.kind === 'product' ? [c.product] : c.kind === 'mlp' ? [c.mlp.gate, c.mlp.up, c.mlp.down] : []
    );
  /** The graph with every initializer in one external data file, by the onnx package. */
  const EXTERNAL = `
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.save(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, location='weights.bin', size_threshold=0)
`;

  test("each is read once for the cut (both cuts and every pattern tried share the reads), and the cut is the inline graph's", () => {
    const dir = mkdtempSync(join(tmpdir(), 'split-reads-'));
    try {
      for (const [name, graph] of [['q4', q4], ['q8', q8]] as const) {
        writeFileSync(join(dir, `${name}-inline.onnx`), graph);
        execFileSync('/usr/bin/python3', ['-c', EXTERNAL, join(dir, `${name}-inline.onnx`), join(dir, `${name}.onnx`)]);
        const path = join(dir, `${name}.onnx`);
        const reads = new Map<string, number>();
        const split = splitAtWeights(new Uint8Array(readFileSync(path)), (t) => {
          reads.set(t.name, (reads.get(t.name) ?? 0) + 1);
          return externalBytes(path, t);
        })!;
        assert.ok(reads.size > 0, name);
        assert.deepEqual([...reads].filter(([, n]) => n > 1), [], `${name}: weights read more than once`);
        // the same products, weights and all, as the cut of the graph with its weights inline
        assert.deepEqual(productsOf(split), productsOf(splitAtWeights(graph)!), name);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a session that consumes the cut lets go of each weight once packed, with the same outputs', async () => {
    const [kept, consumed] = [splitAtWeights(q8)!, splitAtWeights(q8)!];
    const weights = (s: typeof kept) => productsOf(s).reduce((n, p) => n + (p.bits === 4 ? p.b.length : p.w.length), 0);
    const before = weights(consumed);
    assert.ok(before > 0);
    const sa = await SplitSession.create(ort as never, nativeKernels()!, kept, opts);
    const sb = await SplitSession.create(ort as never, nativeKernels()!, consumed, opts, true, true);
    assert.equal(weights(kept), before);
    assert.equal(weights(consumed), 0);
    const feeds = prefill();
    assert.deepEqual((await sb.run(feeds as never)).logits!.data, (await sa.run(feeds as never)).logits!.data);
    await sa.release(), await sb.release();
  });
});
