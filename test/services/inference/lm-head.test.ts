/**
 * The 4-bit LM head taken out of the graph and run on svc's own kernel (src/services/inference/lm-head.ts).
 * The judge is ONNX Runtime running the graph as the file has it: its own MatMulNBits at level 4 makes the
 * logits the cut graph's hidden states and our kernel must reproduce.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { cutLmHead, LOGITS } from '../../../src/services/inference/lm-head.ts';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { decodeFields, first, indexGraph, modelGraph, ONNX, str } from '../../../src/services/models/onnx-wire.ts';
import { nativeKernels } from '../../../src/runtime/kernels.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { REF } from './reference.ts';
import { config, emptyPast, i64, relMax } from './tiny-llama-feeds.ts';
import { observe, type Observed } from '../../support/decoder-observe.ts';
import { SCRIPT_RUNNERS } from '../../support/runtime-process.ts';
import { unsignedJudge } from '../../support/unsigned-judge.ts';

const file = (name: string) => new Uint8Array(readFileSync(join(TINY_LLAMA, 'onnx', name)));
const q4 = file('model_q4.onnx');
const q8 = file('model_quantized.onnx');
const opts = { intraOpNumThreads: 1, logSeverityLevel: 3 } as const;

/** Two rows of the reference prompt (the second shifted), every position's logits: 2 × L rows for the head. */
function prefill(keep: number) {
  const ids = REF.generate.prompt_ids;
  const L = ids.length;
  return {
    input_ids: i64([...ids, ...ids.map((x) => (x + 5) % config.vocab_size)], [2, L]),
    attention_mask: i64(Array(2 * L).fill(1), [2, L]),
    position_ids: i64([...ids.keys(), ...ids.keys()], [2, L]),
    num_logits_to_keep: i64([keep], []),
    ...emptyPast(2),
  };
}

describe('the graph without its head', () => {
  const cut = cutLmHead(q4)!;

  test('a 4-bit head is taken out: its node and weights gone, its input a graph output in place of logits', () => {
    assert.ok(cut && cut.head.bits === 4, 'the q4 graph has a 4-bit head');
    assert.deepEqual([cut.head.k, cut.head.n], [config.hidden_size, config.vocab_size]);
    assert.equal(cut.head.bits === 4 && cut.head.b.length, config.vocab_size * (config.hidden_size / 32) * 16);
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

  test('an 8-bit head is taken out: its five nodes (DynamicQuantizeLinear to the scaled product) and weights gone', () => {
    const c = cutLmHead(q8)!;
    assert.ok(c && c.head.bits === 8, 'the q8 graph has an 8-bit head');
    assert.deepEqual([c.head.k, c.head.n, c.head.w.length], [
      config.hidden_size,
      config.vocab_size,
      config.hidden_size * config.vocab_size,
    ]);
    const before = indexGraph(modelGraph(q8)!.graph), after = indexGraph(modelGraph(c.bytes)!.graph);
    assert.equal(after.nodes.length, before.nodes.length - 5);
    assert.ok(
      !after.nodes.some((n) =>
        ['DynamicQuantizeLinear', 'MatMulInteger'].includes(n.opType) && n.outputs.some((o) => o.startsWith('q8_14'))
      ),
    );
    assert.equal(after.inits.size, before.inits.size - 3);
  });

  test('graphs whose logits are not one of those products stay as they are', () => {
    assert.equal(cutLmHead(file('model.onnx')), undefined); // fp32 MatMul
  });

  for (const [name, graph] of [['q4', q4], ['q8', q8]] as const) {
    test(`${name}: our kernel on the cut graph's hidden states gives ONNX Runtime's logits (every position, both paths, 1 and 2 threads)`, async () => {
      const k = nativeKernels();
      assert.ok(k, 'the native kernels are built (npm run build:native)');
      const c = cutLmHead(graph)!;
      // both run with uint8 weights, as ONNX Runtime computes them exactly on every x64 CPU (../../support/unsigned-judge.ts)
      const whole = await ort.InferenceSession.create(unsignedJudge(graph), opts);
      const part = await ort.InferenceSession.create(unsignedJudge(c.bytes), opts);
      const L = REF.generate.prompt_ids.length;
      const want = (await whole.run(prefill(L))).logits!;
      const hidden = (await part.run(prefill(L)))[c.head.input]!;
      assert.deepEqual(hidden.dims, [2, L, config.hidden_size]);
      const h = c.head;
      const w = h.bits === 4 ? k.packQ4(h.b, h.scales, h.k, h.n) : k.packQ8(h.w, h.scales, h.k, h.n, h.zeroPoint);
      for (const portable of [false, true]) {
        for (const threads of [1, 2]) {
          const y = new Float32Array(2 * L * config.vocab_size);
          const x = hidden.data as Float32Array;
          if (h.bits === 4) k.matmulQ4(w as never, x, 2 * L, y, threads, portable);
          else k.matmulQ8(w as never, x, 2 * L, y, threads, portable);
          const err = relMax(y, want.data as Float32Array);
          assert.ok(err < 1e-5, `portable ${portable}, ${threads} thread(s): ${err}`);
        }
      }
      await whole.release();
      await part.release();
    });
  }
});

describe('loaded as a model', () => {
  const script = fileURLToPath(new URL('../../support/decoder-observe.ts', import.meta.url));
  /** What `observe` sees in a child process: another runtime, or other settings; `alone`: each row by itself. */
  const observeIn = (runner: readonly string[], dtype: string, env: Record<string, string> = {}, alone = false): Observed => {
    const args = [...runner.slice(1), script, dtype, '1', alone ? 'alone' : 'together'];
    const p = spawnSync(runner[0]!, args, { encoding: 'utf8', env: { ...process.env, ...env } });
    assert.equal(p.status, 0, p.stderr);
    return JSON.parse(p.stdout) as Observed;
  };
  const near = (got: Observed, want: Observed, what: string) => {
    const err = relMax(Float32Array.from(got.last), Float32Array.from(want.last));
    assert.ok(err < 1e-5, `${what}: transformers.js' forward: ${err}`);
    assert.deepEqual(got.tokens, want.tokens, what);
  };
  // the kernel is used where it has a vector path, AVX-512 VNNI or AVX2 (elsewhere the graph keeps its head)
  const expected = ['avx512vnni', 'avx2'].includes(nativeKernels()?.path ?? '') ? 1 : 0;

  for (const dtype of ['q4', 'q8']) {
    test(`${dtype}: on the native CPU with AVX-512 VNNI or AVX2 the head runs on our kernel; the logits reach transformers.js and the batch decoder`, async () => {
      const got = await observe(dtype);
      assert.equal(got.lmHeadOwnKernel, expected);
      assert.ok(got.outputNames.includes(LOGITS));
      // judge: the same model in a process without svc's kernels, where ONNX Runtime computes the head, each row
      // alone (svc's 8-bit products quantize a batch's rows each by itself; the graph's, the batch together)
      const want = observeIn(SCRIPT_RUNNERS.node, dtype, { SVC_NATIVE_KERNELS: '0' }, true);
      assert.equal(want.lmHeadOwnKernel, 0);
      near(got, want, 'Node');
    });
  }

  test('q4 on Deno and Bun: the addon loads in their inference threads too, with the same logits and tokens', async () => {
    const node = await observe('q4');
    for (const rt of ['deno', 'bun'] as const) {
      const got = observeIn(SCRIPT_RUNNERS[rt], 'q4');
      assert.equal(got.lmHeadOwnKernel, expected, rt);
      near(got, node, rt);
    }
  });
});
