/**
 * onnxruntime-web sessions run in their own thread: a long WASM run leaves the event loop free, results
 * equal torch's, /health answers fast while WASM generates over HTTP, and 4-bit weights run as int8 with
 * the logits of the 4-bit kernel; a model whose weights lie in an external data file loads; a decoder cut for
 * svc's WASM kernels runs in a thread of its own. This file binds the WASM backend (node --test gives each file
 * a process).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { type LoadedModel, loadModel } from '../../../src/services/inference/load.ts';
import { type GenerateOptions, generateText, type GenerationInput } from '../../../src/services/inference/generate.ts';
import { int8FromNBits, nbitsToInt8 } from '../../../src/services/inference/wasm-q4.ts';
import { type Harness, startHarness } from '../../routes/ollama/harness.ts';
import { externalDataCopy, type ExternalDataModel } from '../../support/external-data-model.ts';
import { MERGED_K, mergedInput, writeMergedNbitsModel } from '../../support/merged-nbits-model.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { promptLogitsByPosition } from './prompt-logits.ts';
import { loopStaysFree, matmulChain } from './matmul-chain.ts';
import { greedyOnReferencePrompt, maxDiff, REF } from './reference.ts';

type OrtLike = typeof import('onnxruntime-web');
/** What onnx reads back from a graph: its initializers, and its MatMulNBits / MatMulInteger nodes in every graph. */
const READ_BACK = `
import json, sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
ops = []
def walk(g):
    for n in g.node:
        ops.append(n.op_type)
        for a in n.attribute:
            for s in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                walk(s)
walk(m.graph)
print(json.dumps({'initializers': sorted(t.name for t in m.graph.initializer), 'matmulnbits': ops.count('MatMulNBits'), 'matmulinteger': ops.count('MatMulInteger')}))
`;
const ort = async () => {
  await initBackend('wasm');
  return (globalThis as Record<symbol, unknown>)[Symbol.for('onnxruntime')] as OrtLike;
};

test('a long WASM session run leaves the event loop free (it runs in the inference thread)', async () => {
  const o = await ort();
  const session = await o.InferenceSession.create(matmulChain());
  assert.equal(session.constructor.name, 'ThreadSession');
  await loopStaysFree((x, n) => session.run({ X: new o.Tensor('float32', x, [n, n]) }).then((r) => r.Y!.data as Float32Array));
  await session.release();
});

describe('tiny-llama on WASM, through the inference thread', () => {
  let m: LoadedModel;
  before(async () => {
    m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'wasm', dtype: 'fp32' });
  });
  after(() => m.dispose());

  test("logits and greedy tokens equal torch's", async () => {
    assert.equal(m.device, 'wasm');
    // the session runs the rewritten decoder: grouped attention, RotaryEmbedding nodes (src/services/inference/decoder-graph.ts),
    // its weights handed over as external data in the model's own bytes (src/services/models/onnx-file.ts)
    const s = (m.model as unknown as {
      sessions: { model: { edits: { groupedAttention: number; rotaryEmbeddings: number; weightsInFile: number; pastAndNew: number } } };
    }).sessions.model.edits;
    assert.ok(s.groupedAttention > 0 && s.rotaryEmbeddings > 0, `${s.groupedAttention} grouped, ${s.rotaryEmbeddings} rotary`);
    // and its attention reads past and new apart, the whole cache made only when fetched (src/services/inference/past-and-new.ts)
    assert.ok(s.pastAndNew > 0);
    assert.ok(s.weightsInFile > 0);
    // no weight products for svc's WASM kernels: in the inference thread, whose onnxruntime-web has every thread
    assert.equal((m.model as unknown as { sessions: { model: { thread: string } } }).sessions.model.thread, 'svc-inference');
    const ids = REF.generate.prompt_ids;
    const t = (xs: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
    const out = await (m.model as unknown as (i: object) => Promise<{ logits: { dims: number[]; data: Float32Array } }>)({
      input_ids: t(ids),
      attention_mask: t(ids.map(() => 1)),
    });
    const v = out.logits.dims[2]!;
    const last = Array.from(out.logits.data.subarray((ids.length - 1) * v, ids.length * v));
    assert.ok(maxDiff(last, REF.generate.last_logits) < 1e-3);
    const n = REF.generate.greedy_ids.length;
    const gen = (await m.model.generate(
      { input_ids: t(ids), attention_mask: t(ids.map(() => 1)), max_new_tokens: n, min_new_tokens: n, do_sample: false } as never,
    )) as unknown as { tolist(): bigint[][] };
    assert.deepEqual(gen.tolist()[0]!.slice(ids.length).map(Number), REF.generate.greedy_ids);
  });
});

describe("a q8 decoder cut for svc's WASM kernels", () => {
  let m: LoadedModel;
  before(async () => {
    m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'wasm', dtype: 'q8' });
  });
  after(() => m.dispose());

  test("runs in a thread of its own, its logits those of onnxruntime-web's run of the whole file", async () => {
    // there onnxruntime-web has one thread, whose pool would spin between the kernels' products (src/services/inference/ort-thread.ts)
    const s = (m.model as unknown as { sessions: { model: { thread: string; edits: { mlpsOwnKernel: number } } } }).sessions.model;
    assert.equal(s.thread, 'svc-inference-kernels');
    assert.ok(s.edits.mlpsOwnKernel > 0, `${s.edits.mlpsOwnKernel} MLPs on the kernels`);
    const ids = REF.generate.prompt_ids;
    const t = (xs: number[]) => new m.tf.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
    const out = await (m.model as unknown as (i: object) => Promise<{ logits: { dims: number[]; data: Float32Array } }>)({
      input_ids: t(ids),
      attention_mask: t(ids.map(() => 1)),
    });
    const v = out.logits.dims[2]!, rows = out.logits.dims[1]!;
    const last = out.logits.data.subarray((rows - 1) * v, rows * v);
    // the file as it is, on this thread's own onnxruntime-web
    const web = (await import('onnxruntime-web')) as unknown as OrtLike;
    const whole = await web.InferenceSession.create(readFileSync(join(TINY_LLAMA, 'onnx', 'model_quantized.onnx')));
    // a position at a time on the cache: svc's 8-bit kernels quantize each position's activations by itself
    const want = await promptLogitsByPosition(whole as never, web.Tensor as never);
    await whole.release();
    // the cut runs the rewritten decoder (grouped attention, RotaryEmbedding), whose float sums differ a little
    // from the file's graph and move some 8-bit roundings of the activations: the same next token, and logits
    // that agree to cosine 0.9999 (the cut itself agrees with the rewritten graph to 1e-5: weight-split.test.ts)
    const wanted = want.subarray(want.length - v);
    const argmax = (a: Float32Array) => a.indexOf(a.reduce((x, y) => Math.max(x, y), -Infinity));
    assert.equal(argmax(last), argmax(wanted));
    let dot = 0, nx = 0, ny = 0;
    for (let i = 0; i < v; i++) (dot += last[i]! * wanted[i]!), (nx += last[i]! ** 2), (ny += wanted[i]! ** 2);
    const cosine = dot / Math.sqrt(nx * ny);
    assert.ok(cosine > 0.9999, `cosine ${cosine}`);
  });
});

describe("a q4 decoder cut for svc's WASM kernels", () => {
  let m: LoadedModel;
  before(async () => {
    m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'wasm', dtype: 'q4' });
  });
  after(() => m.dispose());

  // 4-bit products quantize each row's activations by itself (8-bit ones the whole batch's together), so a batch
  // gives each row what it gives alone
  test("3 concurrent greedy streams (their KV cache in the kernels' memory) give the texts they give alone", async () => {
    assert.equal((m.model as unknown as { sessions: { model: { thread: string } } }).sessions.model.thread, 'svc-inference-kernels');
    const prompts: GenerationInput[] = [{ prompt: 'a b' }, { prompt: 'The quick brown fox jumps over the lazy dog. '.repeat(12) }, {
      prompt: 'Tell me about Paris.',
    }];
    const text = async (input: GenerationInput, o: GenerateOptions) => {
      const g = generateText(m, input, o);
      let t = '';
      for await (const d of g) t += d;
      await g.result;
      return t;
    };
    const o = { temperature: 0, maxTokens: 12 };
    const alone: string[] = [];
    for (const p of prompts) alone.push(await text(p, { ...o, batching: false }));
    assert.deepEqual(await Promise.all(prompts.map((p) => text(p, o))), alone);
  });
});

// transformers.js hands onnxruntime-web only the model's path under Node; the weights beside it must load too
describe('tiny-llama with its weights in an external data file, on WASM', () => {
  let copy: ExternalDataModel;
  let m: LoadedModel | undefined;
  before(() => {
    copy = externalDataCopy(TINY_LLAMA);
  });
  after(async () => {
    await m?.dispose();
    copy?.remove();
  });

  test("loads (onnx/model.onnx + model.onnx_data) and greedy tokens equal torch's", async () => {
    // the graph holds no weights: onnx reads every initializer as external, and the graph file shrank to a fraction
    assert.ok(copy.initializers > 0 && copy.external === copy.initializers, `${copy.external} of ${copy.initializers} external`);
    assert.ok(copy.sizes.graph < copy.sizes.original / 2, JSON.stringify(copy.sizes));
    assert.ok(copy.sizes.data > copy.sizes.original / 2, JSON.stringify(copy.sizes));
    m = await loadModel(copy.dir, 'text-generation', { backend: 'wasm', dtype: 'fp32' });
    assert.equal(m.device, 'wasm', `fallbacks ${JSON.stringify(m.fallbacks)}`);
    assert.deepEqual(await greedyOnReferencePrompt(m.model, m.tf.Tensor), REF.generate.greedy_ids);
  });
});

describe('HTTP while WASM generates', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ backend: 'wasm' });
  });
  after(() => h?.close());

  // End to end (the bound of the hostile corpus test: this client shares the server's process and the
  // machine may be loaded); that a WASM run does not hold the loop at all is the first test of this file.
  test('/health answers (p99 < 250 ms) while 4 WASM streams generate', async () => {
    const body = (i: number) => ({
      model: 'tiny-llama',
      prompt: `Story ${i}:`,
      stream: false,
      options: { temperature: 0, num_predict: 200 },
    });
    await (await h.post('/api/generate', body(0))).json(); // loaded and warm
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    let generating = true;
    const gens = Promise.all([0, 1, 2, 3].map(async (i) => (await h.post('/api/generate', body(i))).json())).finally(
      () => (generating = false),
    );
    const lat: number[] = [];
    while (generating) {
      const t0 = performance.now();
      const r = await fetch(`${h.srv.url}/health`);
      await r.arrayBuffer();
      lat.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 5));
    }
    const answers = await gens;
    delay.disable();
    for (const a of answers) assert.ok(a.done && a.eval_count > 0, JSON.stringify(a).slice(0, 200));
    lat.sort((a, b) => a - b);
    const p99 = lat[Math.floor(lat.length * 0.99)]!;
    assert.ok(lat.length >= 10, `health samples: ${lat.length}`);
    const loop = `event loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`;
    assert.ok(p99 < 250, `/health p99 ${p99.toFixed(1)} ms (max ${lat.at(-1)!.toFixed(1)} ms, ${lat.length} samples; ${loop})`);
  });
});

describe('4-bit weights on WASM run as int8', () => {
  test('requantized codes: within half an int8 step of the 4-bit values (independent reading of the format)', () => {
    const K = 70, N = 5, block = 32; // a partial last block
    const blocks = Math.ceil(K / block);
    const packed = Uint8Array.from({ length: N * blocks * block / 2 }, (_, i) => (i * 37 + 11) & 255);
    const scales = Float32Array.from({ length: N * blocks }, (_, i) => 0.01 + 0.003 * i);
    const zp = Uint8Array.from({ length: N * Math.ceil(blocks / 2) }, (_, i) => (i * 5 + 3) & 255);
    const { q, scales: col } = int8FromNBits(packed, scales, zp, K, N, block);
    for (let n = 0; n < N; n++) {
      for (let k = 0; k < K; k++) {
        // MatMulNBits: B[n][block][k%block/2], the element with the even index in the low nibble
        const b = Math.floor(k / block), j = k % block;
        const byte = packed[(n * blocks + b) * (block / 2) + Math.floor(j / 2)]!;
        const code = j % 2 === 0 ? byte & 0x0f : byte >> 4;
        const zbyte = zp[n * Math.ceil(blocks / 2) + Math.floor(b / 2)]!;
        const z = b % 2 === 0 ? zbyte & 0x0f : zbyte >> 4;
        const want = scales[n * blocks + b]! * (code - z);
        const got = q[k * N + n]! * col[n]!;
        assert.ok(Math.abs(got - want) <= col[n]! / 2 + 1e-7, `n=${n} k=${k}: ${got} vs ${want}`);
      }
    }
  });

  /** A q4 graph's WASM session against onnxruntime-web on the file as it is; `tables`: embedding tables made int8. */
  const closeTo4Bit = async (file: string, tables: number) => {
    const bytes = new Uint8Array(readFileSync(file));
    const converted = nbitsToInt8(bytes)!;
    assert.ok(converted.converted > 0);
    const ids = REF.generate.prompt_ids;
    const o = await ort();
    // the untouched 4-bit graph on this thread's own WASM instance (the slow kernel, fine at this size)
    const web = (await import('onnxruntime-web')) as unknown as OrtLike;
    const feeds = (T: OrtLike['Tensor'], past: { name: string; dims: number[] }[]) => {
      const f: Record<string, unknown> = {
        input_ids: new T('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
        attention_mask: new T('int64', BigInt64Array.from(ids.map(() => 1n)), [1, ids.length]),
        position_ids: new T('int64', BigInt64Array.from(ids.map((_, i) => BigInt(i))), [1, ids.length]),
        num_logits_to_keep: new T('int64', BigInt64Array.of(0n), []), // 0: logits of every position
      };
      for (const p of past) f[p.name] = new T('float32', new Float32Array(0), p.dims);
      return f;
    };
    const config = JSON.parse(readFileSync(join(TINY_LLAMA, 'config.json'), 'utf8'));
    const past = Array.from(
      { length: config.num_hidden_layers },
      (_, l) =>
        ['key', 'value'].map((kv) => ({ name: `past_key_values.${l}.${kv}`, dims: [1, config.num_key_value_heads, 0, config.head_dim] })),
    )
      .flat();
    const logits = async (
      s: { run(f: never): Promise<Record<string, { data: unknown; dims: readonly number[] }>> },
      T: OrtLike['Tensor'],
    ) => (await s.run(feeds(T, past) as never)).logits!.data as Float32Array;
    const q4 = await logits(await web.InferenceSession.create(bytes), web.Tensor);
    const fp32 = await logits(await web.InferenceSession.create(join(TINY_LLAMA, 'onnx', 'model.onnx')), web.Tensor);
    const thread = await o.InferenceSession.create(file);
    assert.ok((thread as unknown as { edits: { int8From4Bit: number } }).edits.int8From4Bit > 0, 'the session runs int8 weights');
    assert.equal((thread as unknown as { edits: { int8Embeddings: number } }).edits.int8Embeddings, tables);
    const int8 = await logits(thread, o.Tensor);
    const v = config.vocab_size;
    const cosine = (a: Float32Array, b: Float32Array, p: number) => {
      const x = a.subarray(p * v, (p + 1) * v), y = b.subarray(p * v, (p + 1) * v);
      let dot = 0, nx = 0, ny = 0;
      for (let i = 0; i < v; i++) (dot += x[i]! * y[i]!), (nx += x[i]! ** 2), (ny += y[i]! ** 2);
      return dot / Math.sqrt(nx * ny);
    };
    for (let p = 0; p < ids.length; p++) {
      // the requantization moves the logits at least ten times less than 4 bits moved them from fp32
      const [added, own] = [1 - cosine(int8, q4, p), 1 - cosine(q4, fp32, p)];
      assert.ok(added < 0.005 && added < own / 10, `position ${p}: 1 - cosine vs 4-bit ${added}, 4-bit vs fp32 ${own}`);
    }
    await thread.release();
  };

  test("tiny-llama q4: a WASM session of int8 weights, logits close to ONNX Runtime's 4-bit kernel", async () => {
    await closeTo4Bit(join(TINY_LLAMA, 'onnx', 'model_q4.onnx'), 0);
  });

  test('a q4 file made as the hub makes them (fp32 embedding table): the table held as int8 too, logits as close', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wasm-hub-q4-'));
    try {
      const file = join(dir, 'model_q4.onnx');
      execFileSync('/usr/bin/python3', ['scripts/models/hub-q4.py', join(TINY_LLAMA, 'onnx', 'model.onnx'), file]);
      await closeTo4Bit(file, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a merged decoder's 4-bit weights, read in both branches of an If, become one int8 weight; outputs close to ONNX Runtime's 4-bit kernel", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wasm-merged-'));
    try {
      const file = join(dir, 'merged.onnx');
      writeMergedNbitsModel(file);
      const converted = nbitsToInt8(new Uint8Array(readFileSync(file)))!;
      assert.equal(converted.converted, 2);
      // onnx's own reading of the converted graph: valid, one int8 weight, the 4-bit one gone
      writeFileSync(join(dir, 'converted.onnx'), converted.bytes);
      const seen = JSON.parse(execFileSync('/usr/bin/python3', ['-c', READ_BACK, join(dir, 'converted.onnx')], { encoding: 'utf8' }));
      assert.deepEqual(seen, {
        initializers: ['B_wasm8_quantized', 'B_wasm8_scale', 'B_wasm8_zero_point'],
        matmulnbits: 0,
        matmulinteger: 2,
      });
      const o = await ort();
      const web = (await import('onnxruntime-web')) as unknown as OrtLike;
      const reference = await web.InferenceSession.create(new Uint8Array(readFileSync(file)));
      const thread = await o.InferenceSession.create(file);
      assert.equal((thread as unknown as { edits: { int8From4Bit: number } }).edits.int8From4Bit, 2);
      const run = async (s: { run(f: never): Promise<Record<string, { data: unknown }>> }, T: OrtLike['Tensor'], branch: boolean) =>
        (await s.run({ X: new T('float32', mergedInput(), [2, MERGED_K]), C: new T('bool', Uint8Array.of(branch ? 1 : 0), []) } as never))
          .Y!
          .data as Float32Array;
      for (const branch of [true, false]) {
        const [want, got] = [await run(reference, web.Tensor, branch), await run(thread, o.Tensor, branch)];
        // the requantization error: a small fraction of the outputs' size
        const err = Math.sqrt(want.reduce((e, w, i) => e + (w - got[i]!) ** 2, 0) / want.reduce((e, w) => e + w * w, 0));
        assert.ok(err < 0.02, `branch ${branch}: relative error ${err}`);
        assert.ok(Math.sign(got[0]!) === Math.sign(want[0]!));
      }
      await thread.release();
      await reference.release();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
