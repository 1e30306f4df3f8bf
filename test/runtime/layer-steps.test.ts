/**
 * The native kernels' steps between a layer's products (rmsNorm, addInto, addRmsNorm: src/runtime/kernels.ts; the
 * last on the WASM kernels too), judged by
 * ONNX Runtime running the nodes they stand for: the RMSNorm exporters write (which ONNX Runtime fuses into its
 * SimplifiedLayerNormalization) and that node itself, a residual Add, a bias Add. Graphs built by the `onnx`
 * package.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { nativeKernels, nativeKernelsUnavailable } from '../../src/runtime/kernels.ts';
import { wasmKernels, wasmKernelsUnavailable } from '../../src/runtime/wasm-kernels.ts';

/** The addon, or a failure that says why it is missing: no silent skip. */
function addon() {
  const k = nativeKernels();
  assert.ok(k, `native kernels did not load: ${nativeKernelsUnavailable()}`);
  return k;
}

/** The WASM kernels, or a failure that says why they are missing. */
function wasm() {
  const k = wasmKernels();
  assert.ok(k, `WASM kernels did not load: ${wasmKernelsUnavailable()}`);
  return k;
}

const BUILD = `
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
N, eps, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
w = np.random.default_rng(7).uniform(0.2, 2.5, N).astype(np.float32)
b = np.random.default_rng(8).normal(0, 1, N).astype(np.float32)
c = lambda name, v: helper.make_node('Constant', [], [name], value=numpy_helper.from_array(np.array(v, dtype=np.float32)))
nodes = [c('two', 2.0), helper.make_node('Pow', ['x', 'two'], ['p']),
  helper.make_node('ReduceMean', ['p'], ['m'], axes=[-1], keepdims=1), c('eps', eps), helper.make_node('Add', ['m', 'eps'], ['a']),
  helper.make_node('Sqrt', ['a'], ['s']), c('one', 1.0), helper.make_node('Div', ['one', 's'], ['d']),
  helper.make_node('Mul', ['x', 'd'], ['xd']), helper.make_node('Mul', ['w', 'xd'], ['norm']),
  helper.make_node('Add', ['x', 'r'], ['sum']), helper.make_node('Add', ['b', 'x'], ['biased']),
  helper.make_node('SimplifiedLayerNormalization', ['x', 'w'], ['sln'], axis=-1, epsilon=eps),
  helper.make_node('SimplifiedLayerNormalization', ['sum', 'w'], ['sumsln'], axis=-1, epsilon=eps)]
io = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, ['M', N])
g = helper.make_graph(nodes, 'steps', [io('x'), io('r')], [io('norm'), io('sum'), io('biased'), io('sln'), io('sumsln')],
  [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(b, 'b')])
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 8
onnx.save(m, out)
w.tofile(out + '.w')
b.tofile(out + '.b')
`;

const dir = mkdtempSync(join(tmpdir(), 'layer-steps-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Values with a wide spread of magnitudes, some rows all small, one row of zeros. */
function input(m: number, n: number, seed: number): Float32Array {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32);
  return Float32Array.from({ length: m * n }, (_, i) => (Math.floor(i / n) === 2 ? 0 : (rnd() - 0.5) * 10 ** (3 * rnd() - 2)));
}

for (const [n, eps] of [[896, 1e-6], [64, 1e-5], [1536, 1e-6]] as const) {
  test(`width ${n}, epsilon ${eps}: the RMSNorm, a residual sum and a bias as ONNX Runtime computes them, bit for bit`, async () => {
    const file = join(dir, `steps-${n}.onnx`);
    execFileSync('/usr/bin/python3', ['-c', BUILD, String(n), String(eps), file]);
    const { readFileSync } = await import('node:fs');
    const w = new Float32Array(new Uint8Array(readFileSync(`${file}.w`)).buffer);
    const b = new Float32Array(new Uint8Array(readFileSync(`${file}.b`)).buffer);
    const session = await ort.InferenceSession.create(file, { intraOpNumThreads: 1 });
    const m = 7;
    const x = input(m, n, n), r = input(m, n, n + 1);
    const want = await session.run({ x: new ort.Tensor('float32', x, [m, n]), r: new ort.Tensor('float32', r, [m, n]) });
    const k = addon();
    const sum = new Float32Array(m * n), biased = new Float32Array(m * n);
    k.addInto(x, r, sum);
    k.addInto(x, b, biased);
    assert.deepEqual(sum, want.sum!.data, 'sum');
    assert.deepEqual(biased, want.biased!.data, 'bias');
    // the norms on the CPU's path (AVX2 and FMA on x64) and in plain C
    for (const portable of [false, true]) {
      const path = portable ? 'portable' : k.path;
      const norm = new Float32Array(m * n);
      k.rmsNorm(x, w, eps, norm, portable);
      // the seven nodes exporters write, which ONNX Runtime fuses into its SimplifiedLayerNormalization, and that node
      assert.deepEqual(norm, want.norm!.data, `${path}: RMSNorm`);
      assert.deepEqual(norm, want.sln!.data, `${path}: SimplifiedLayerNormalization`);
    }
    // a residual sum and the norm of it in one call, on the addon (both paths) and on the WASM kernels
    for (const [kernels, portable] of [[k, false], [k, true], [wasm(), false]] as const) {
      const path = portable ? 'portable' : kernels.path;
      const sum2 = new Float32Array(m * n), normed = new Float32Array(m * n);
      kernels.addRmsNorm(x, r, w, eps, sum2, normed, portable);
      assert.deepEqual(sum2, want.sum!.data, `${path}: addRmsNorm's sum`);
      assert.deepEqual(normed, want.sumsln!.data, `${path}: addRmsNorm's norm`);
    }
    await session.release();
  });
}

test('shapes that do not fit are TypeErrors', () => {
  const k = addon();
  const f = (n: number) => new Float32Array(n);
  assert.throws(() => k.rmsNorm(f(20), f(8), 1e-6, f(20)), TypeError, 'x not whole rows');
  assert.throws(() => k.rmsNorm(f(12), f(12), 1e-6, f(12)), TypeError, 'a width not a multiple of 8');
  assert.throws(() => k.rmsNorm(f(16), f(8), 1e-6, f(8)), TypeError, 'y shorter than x');
  assert.throws(() => k.rmsNorm(f(16), f(8), 'a' as never, f(16)), TypeError, 'epsilon not a number');
  assert.throws(() => k.addInto(f(4), f(5), f(4)), TypeError, 'b longer than a');
  assert.throws(() => k.addInto(f(10), f(4), f(10)), TypeError, 'b not whole rows of a');
  assert.throws(() => k.addInto(f(8), f(4), f(4)), TypeError, 'y shorter than a');
  for (const kernels of [k, wasm()]) {
    const what = (x: string) => `${kernels.path}: ${x}`;
    assert.throws(() => kernels.addRmsNorm(f(16), f(8), f(8), 1e-6, f(16), f(16)), TypeError, what('b a row of a'));
    assert.throws(() => kernels.addRmsNorm(f(16), f(16), f(8), 1e-6, f(8), f(16)), TypeError, what('sum shorter than a'));
    assert.throws(() => kernels.addRmsNorm(f(16), f(16), f(8), 1e-6, f(16), f(8)), TypeError, what('y shorter than a'));
    assert.throws(() => kernels.addRmsNorm(f(20), f(20), f(8), 1e-6, f(20), f(20)), TypeError, what('a not whole rows'));
  }
});
