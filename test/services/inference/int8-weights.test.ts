/**
 * 8-bit files whose MatMulInteger weights are uint8 (transformers.js' quantizer writes them so for graphs with
 * a Conv) get int8 weights on a CPU with VNNI: the same integers multiplied, so the outputs must be ONNX
 * Runtime's on the file as it is, bit for bit. Files with int8 weights get uint8 ones on x64 without VNNI,
 * where ONNX Runtime's int8 products saturate: their outputs must be the exact ones, ONNX Runtime's on the
 * uint8 file, on every CPU. The uint8 graphs are made by the real `onnx` package from the fixture's q8 graph.
 * This file binds the native backend (node --test gives each file a process).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { hasVnni, int8ProductsSaturate } from '../../../src/runtime/cpu.ts';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { withSignedWeights } from '../../../src/services/inference/int8-weights.ts';
import { importOnnxruntimeNode } from '../../../src/services/inference/onnxruntime-node.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { config, relMax } from './tiny-llama-feeds.ts';
import { DECODER_OPTION, decoderShape } from '../../../src/services/inference/decoder-graph.ts';
import { nativeKernels } from '../../../src/runtime/kernels.ts';
import { promptLogits, promptLogitsByPosition } from './prompt-logits.ts';

type Ort = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

const Q8 = join(TINY_LLAMA, 'onnx', 'model_quantized.onnx');
const VARIANTS = { raw: [], int32: ['--int32-zero-points'], none: ['--no-zero-points'] } as const;
type Variant = keyof typeof VARIANTS;

let dir: string;
let ort: Ort;
let weights: number;
/** ONNX Runtime's logits on each uint8 file as it is, before the backend binds. */
const asIs = new Map<Variant, Float32Array>();
/** ONNX Runtime's logits on the uint8 form of the file with negative zero points (below). */
let negativeJudge: Float32Array;

/**
 * Every int8 MatMulInteger weight of SRC given a zero point of -1 to -5, stored as onnx.helper.make_tensor
 * stores small tensors: in int32_data, where a negative value is a 10-byte varint.
 */
const NEGATIVE_ZERO_POINTS = `
import sys, onnx, numpy as np
from onnx import helper, numpy_helper
m = onnx.load(sys.argv[1])
inits = {t.name: t for t in m.graph.initializer}
done = {}
for n in m.graph.node:
    if n.op_type != 'MatMulInteger' or n.input[1] not in inits or numpy_helper.to_array(inits[n.input[1]]).dtype != np.int8:
        continue
    w = n.input[1]
    if w not in done:
        done[w] = w + '_negative_zero_point'
        t = helper.make_tensor(done[w], onnx.TensorProto.INT8, [], [-1 - len(done) % 5])
        assert len(t.int32_data) == 1 and not t.raw_data
        m.graph.initializer.append(t)
    inputs = list(n.input) + [''] * (4 - len(n.input))
    inputs[3] = done[w]
    del n.input[:]
    n.input.extend(inputs)
onnx.save(m, sys.argv[2])
`;

/**
 * The first int8 MatMulInteger weight given a zero point of its own, -5: its weights less it reach 132, out of
 * int8, so the kernels leave that product to ONNX Runtime. Prints the weight's largest value.
 */
const OUT_OF_RANGE = `
import sys, onnx, numpy as np
from onnx import helper, numpy_helper
m = onnx.load(sys.argv[1])
inits = {t.name: t for t in m.graph.initializer}
n = next(n for n in m.graph.node if n.op_type == 'MatMulInteger' and inits[n.input[1]].data_type == onnx.TensorProto.INT8)
m.graph.initializer.append(helper.make_tensor('out_of_range_zero_point', onnx.TensorProto.INT8, [], [-5]))
inputs = list(n.input) + [''] * (4 - len(n.input))
inputs[3] = 'out_of_range_zero_point'
del n.input[:]
n.input.extend(inputs)
onnx.save(m, sys.argv[2])
print(int(numpy_helper.to_array(inits[inputs[1]]).max()))
`;

const logits = (s: Session) => promptLogits(s as never, ort.Tensor as never);
const byPosition = (s: Session) => promptLogitsByPosition(s as never, ort.Tensor as never);
const file = (v: Variant) => join(dir, `${v}.onnx`);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'int8-weights-'));
  for (const [v, flags] of Object.entries(VARIANTS)) {
    weights = Number(
      execFileSync('/usr/bin/python3', ['scripts/models/q8-unsigned.py', Q8, file(v as Variant), ...flags], { encoding: 'utf8' }),
    );
  }
  assert.ok(weights > 0);
  // the fixture's int8 file with negative zero points in int32_data, and that file made uint8 (its judge)
  execFileSync('/usr/bin/python3', ['-c', NEGATIVE_ZERO_POINTS, Q8, join(dir, 'negative.onnx')]);
  execFileSync('/usr/bin/python3', ['scripts/models/q8-unsigned.py', join(dir, 'negative.onnx'), join(dir, 'negative-uint8.onnx')]);
  const top = Number(execFileSync('/usr/bin/python3', ['-c', OUT_OF_RANGE, Q8, join(dir, 'out-of-range.onnx')], { encoding: 'utf8' }));
  assert.ok(top + 5 > 127, `the weight's largest value less -5 leaves int8: ${top}`);
  execFileSync('/usr/bin/python3', ['scripts/models/q8-unsigned.py', join(dir, 'out-of-range.onnx'), join(dir, 'out-of-range-uint8.onnx')]);
  ort = (await importOnnxruntimeNode()) as unknown as Ort;
  for (const v of Object.keys(VARIANTS) as Variant[]) {
    const s = await ort.InferenceSession.create(file(v), { intraOpNumThreads: 1 });
    asIs.set(v, await logits(s));
    await s.release();
  }
  const judge = await ort.InferenceSession.create(join(dir, 'negative-uint8.onnx'), { intraOpNumThreads: 1 });
  negativeJudge = await logits(judge);
  await judge.release();
  assert.equal((await initBackend('cpu')).ort, 'onnxruntime-node');
});
after(() => rmSync(dir, { recursive: true, force: true }));

for (const v of Object.keys(VARIANTS) as Variant[]) {
  test(`uint8 weights (zero points: ${v}) become int8 on a CPU with VNNI, and the logits stay ONNX Runtime's bit for bit`, async () => {
    const s = await ort.InferenceSession.create(file(v), { intraOpNumThreads: 1 });
    assert.equal(s.constructor.name, 'ThreadSession');
    // where the CPU lacks VNNI the graph is used as it is (its int8 kernels could saturate on signed weights)
    assert.equal((s as unknown as { edits: { signedWeights: number } }).edits.signedWeights, hasVnni() ? weights : 0);
    assert.deepEqual(await logits(s), asIs.get(v));
    await s.release();
  });
}

test("int8 weights give the exact logits (the uint8 file's, bit for bit) on every CPU: made uint8 on x64 without VNNI", async () => {
  const s = await ort.InferenceSession.create(Q8, { intraOpNumThreads: 1 });
  assert.equal((s as unknown as { edits: { signedWeights: number } }).edits.signedWeights, int8ProductsSaturate() ? weights : 0);
  assert.deepEqual(await logits(s), asIs.get('raw'));
  await s.release();
});

test('negative int8 zero points stored in int32_data (10-byte varints) are read right: the exact logits on every CPU', async () => {
  const s = await ort.InferenceSession.create(join(dir, 'negative.onnx'), { intraOpNumThreads: 1 });
  assert.equal((s as unknown as { edits: { signedWeights: number } }).edits.signedWeights, int8ProductsSaturate() ? weights : 0);
  assert.deepEqual(await logits(s), negativeJudge);
  await s.release();
});

for (
  const [name, judge] of [['int8', () => file('raw')], ['a zero point out of range', () => join(dir, 'out-of-range-uint8.onnx')]] as const
) {
  test(`a decoder cut onto the kernels (${name}): only the 8-bit products ONNX Runtime still runs get uint8 weights (x64 without VNNI)`, async () => {
    const path = name === 'int8' ? Q8 : join(dir, 'out-of-range.onnx');
    const s = await ort.InferenceSession.create(path, { intraOpNumThreads: 1, [DECODER_OPTION]: decoderShape(config) } as never);
    const edits = (s as unknown as { edits: { signedWeights: number; mlpsOwnKernel: number } }).edits;
    const kernels = ['avx512vnni', 'avx2'].includes(nativeKernels()?.path ?? '');
    assert.equal(edits.mlpsOwnKernel > 0, kernels);
    // the kernels take int8 weights as the file holds them; the product whose weights less their zero point
    // leave int8 stays with ONNX Runtime, and that one alone is made uint8 where its int8 products saturate
    const left = name === 'int8' ? 0 : 1;
    assert.equal(edits.signedWeights, !int8ProductsSaturate() ? 0 : kernels ? left : weights);
    // ONNX Runtime's on the uint8 file within the kernels' float rounding (./weight-split.test.ts); a product
    // whose pairs saturated moves them far more. Both take the prompt a position at a time: the kernels quantize
    // each position's activations by itself, a product left to ONNX Runtime a call's positions together
    const uint8 = await ort.InferenceSession.create(judge(), { intraOpNumThreads: 1 });
    assert.ok(relMax(await byPosition(s), await byPosition(uint8)) < 1e-5);
    await uint8.release();
    await s.release();
  });
}

test("a uint8 weight something else reads too stays beside its int8 copy (onnx's reading of the result)", () => {
  // the fixture's first weight also feeds an Identity node that becomes a graph output
  const edit = `
import sys, onnx
from onnx import helper
m = onnx.load(sys.argv[1])
w = next(n.input[1] for n in m.graph.node if n.op_type == 'MatMulInteger')
m.graph.node.append(helper.make_node('Identity', [w], ['weight_copy']))
dims = next(list(t.dims) for t in m.graph.initializer if t.name == w)
m.graph.output.append(helper.make_tensor_value_info('weight_copy', onnx.TensorProto.UINT8, dims))
onnx.save(m, sys.argv[2])
print(w)
`;
  const shared = join(dir, 'shared.onnx');
  const w = execFileSync('/usr/bin/python3', ['-c', edit, file('raw'), shared], { encoding: 'utf8' }).trim();
  const out = withSignedWeights(new Uint8Array(readFileSync(shared)))!;
  assert.equal(out.weights, weights);
  writeFileSync(join(dir, 'signed.onnx'), out.bytes);
  const read = `
import json, sys, onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
t = {i.name: i.data_type for i in m.graph.initializer}
print(json.dumps({'kept': t.get(sys.argv[2]), 'copy': t.get(sys.argv[2] + '_s8'), 'uint8_left': sum(v == 2 for v in t.values())}))
`;
  const seen = JSON.parse(execFileSync('/usr/bin/python3', ['-c', read, join(dir, 'signed.onnx'), w], { encoding: 'utf8' }));
  // 2: uint8, 3: int8 (TensorProto.DataType); the other weights and zero points are all int8 now
  assert.deepEqual(seen, { kept: 2, copy: 3, uint8_left: 1 });
});
