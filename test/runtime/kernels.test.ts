/**
 * Our 4-bit kernel (native/kernels) against ONNX Runtime itself: a one-node MatMulNBits graph (bits 4, blocks
 * of 32, accuracy_level 4), built by the real `onnx` Python package with the same codes and scales, run by
 * onnxruntime-node on one thread. Every output element of both paths (AVX-512 VNNI and plain C), on one and two
 * threads, must be ONNX Runtime's to 1e-5 of the output's largest magnitude. The addon must be built
 * (`npm run build:native`): a missing one fails here.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type NativeKernels, nativeKernels, nativeKernelsUnavailable } from '../../src/runtime/kernels.ts';
import { importOnnxruntimeNode } from '../../src/services/inference/onnxruntime-node.ts';

type Ort = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

const BUILD = `
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
K, N, b_path, s_path, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
B = numpy_helper.from_array(np.fromfile(b_path, dtype=np.uint8).reshape(N, K // 32, 16), 'B')
S = numpy_helper.from_array(np.fromfile(s_path, dtype=np.float32), 'S')
node = helper.make_node('MatMulNBits', ['A', 'B', 'S'], ['Y'], domain='com.microsoft', K=K, N=N, bits=4, block_size=32,
    accuracy_level=4)
g = helper.make_graph([node], 'q4', [helper.make_tensor_value_info('A', TensorProto.FLOAT, ['M', K])],
    [helper.make_tensor_value_info('Y', TensorProto.FLOAT, ['M', N])], [B, S])
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('com.microsoft', 1)])
m.ir_version = 8
onnx.save(m, out)
`;

const SHAPES = [[96, 40], [896, 128], [4864, 896]] as const;

/** Deterministic uniform numbers in [0, 1) (mulberry32). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Case {
  k: number;
  n: number;
  b: Uint8Array;
  scales: Float32Array;
  session: Session;
}

let dir: string;
let ort: Ort;
let kernels: NativeKernels | undefined;
const cases: Case[] = [];

before(async () => {
  kernels = nativeKernels();
  dir = mkdtempSync(join(tmpdir(), 'kernels-'));
  ort = (await importOnnxruntimeNode()) as unknown as Ort;
  for (const [k, n] of SHAPES) {
    const rnd = random(k * 7919 + n);
    const b = Uint8Array.from({ length: (n * k) / 2 }, () => Math.floor(rnd() * 256));
    const scales = Float32Array.from({ length: (n * k) / 32 }, () => 0.002 + rnd() * 0.05);
    const [bPath, sPath, model] = ['b.bin', 's.bin', `q4-${k}x${n}.onnx`].map((f) => join(dir, f)) as [string, string, string];
    writeFileSync(bPath, b);
    writeFileSync(sPath, new Uint8Array(scales.buffer));
    execFileSync('/usr/bin/python3', ['-c', BUILD, String(k), String(n), bPath, sPath, model]);
    const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
    cases.push({ k, n, b, scales, session });
  }
});
after(async () => {
  for (const c of cases) await c.session.release();
  rmSync(dir, { recursive: true, force: true });
});

/** The addon, or a failure that says why it is missing: no silent skip. */
function addon(): NativeKernels {
  assert.ok(kernels, `native kernels did not load: ${nativeKernelsUnavailable()}`);
  return kernels;
}

/** Activations with outliers in some blocks, so the per-block scales differ widely. */
const input = (m: number, k: number, seed: number): Float32Array => {
  const rnd = random(seed);
  return Float32Array.from({ length: m * k }, (_, i) => (rnd() - 0.5) * (i % 97 === 0 ? 40 : 2));
};

async function ortOutput(c: Case, x: Float32Array, m: number): Promise<Float32Array> {
  const out = await c.session.run({ A: new ort.Tensor('float32', x, [m, c.k]) });
  return out.Y!.data as Float32Array;
}

function assertClose(got: Float32Array, want: Float32Array, what: string): void {
  assert.equal(got.length, want.length);
  const tol = 1e-5 * want.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
  assert.ok(tol > 0, `${what}: ONNX Runtime's output is all zeros`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i]! - want[i]!) <= tol)) {
      assert.fail(`${what}: element ${i} is ${got[i]}, ONNX Runtime's ${want[i]} (tolerance ${tol})`);
    }
  }
}

test('the addon is built and loads', () => {
  assert.equal(nativeKernelsUnavailable(), undefined);
  assert.ok(['avx512vnni', 'portable'].includes(addon().path));
});

test('on a CPU with AVX-512 VNNI the VNNI path is the default', () => {
  const flags = /^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '';
  const vnni = ['avx512_vnni', 'avx512bw', 'avx512vl', 'avx512f', 'fma'].every((f) => new RegExp(`\\b${f}\\b`).test(flags));
  if (/\bavx512_vnni\b/.test(flags)) assert.ok(vnni, 'avx512_vnni without the AVX-512 features it needs');
  assert.equal(addon().path, vnni ? 'avx512vnni' : 'portable');
});

for (const [k, n] of SHAPES) {
  test(`K=${k} N=${n}: ONNX Runtime's MatMulNBits outputs, both paths, 1 and 2 threads, M = 1, 3, 5`, async () => {
    const kn = addon();
    const c = cases.find((c) => c.k === k && c.n === n)!;
    const w = kn.packQ4(c.b, c.scales, k, n);
    assert.equal(w.k, k);
    assert.equal(w.n, n);
    for (const m of [1, 3, 5]) {
      const x = input(m, k, m * 31 + k);
      const want = await ortOutput(c, x, m);
      let first: Float32Array | undefined;
      for (const portable of [false, true]) {
        for (const threads of [1, 2]) {
          // y is a view with a guard after it: columns past N (padding) must never be written
          const buf = new Float32Array(m * n + 16).fill(12345);
          const y = buf.subarray(0, m * n);
          kn.matmulQ4(w, x, m, y, threads, portable);
          assertClose(y, want, `M=${m} portable=${portable} threads=${threads}`);
          assert.ok(buf.subarray(m * n).every((v) => v === 12345), 'wrote past y');
          // the two paths do the same integer sums and the same fused float steps
          if (first) assert.deepEqual(y, first, 'the paths or thread counts differ');
          else first = Float32Array.from(y);
        }
      }
    }
  });
}

test('y may be a view on a SharedArrayBuffer', async () => {
  const kn = addon();
  const c = cases[1]!;
  const w = kn.packQ4(c.b, c.scales, c.k, c.n);
  const x = input(3, c.k, 5);
  const y = new Float32Array(new SharedArrayBuffer(3 * c.n * 4));
  kn.matmulQ4(w, x, 3, y, 2);
  assertClose(y, await ortOutput(c, x, 3), 'SharedArrayBuffer');
});

test('wrong shapes and arguments are TypeErrors', () => {
  const kn = addon();
  const [k, n] = [64, 20];
  const b = new Uint8Array((n * k) / 2);
  const s = new Float32Array((n * k) / 32);
  const te = { name: 'TypeError' };
  assert.throws(() => kn.packQ4(new Uint8Array((n * 48) / 2), new Float32Array(n * 2), 48, n), te, 'k not a multiple of 32');
  assert.throws(() => kn.packQ4(b.subarray(1), s, k, n), te, 'b too short');
  assert.throws(() => kn.packQ4(b, s.subarray(1), k, n), te, 'scales too short');
  assert.throws(() => kn.packQ4(b, new Float32Array(s.length + 1), k, n), te, 'scales too long');
  assert.throws(() => kn.packQ4(new Int8Array(b.length) as never, s, k, n), te, 'b not a Uint8Array');
  assert.throws(() => kn.packQ4(b, s, k, 0), te, 'n = 0');
  assert.throws(() => kn.packQ4(b, s, 64.5, n), te, 'k not whole');
  const w = kn.packQ4(b, s, k, n);
  const x = new Float32Array(2 * k);
  const y = new Float32Array(2 * n);
  kn.matmulQ4(w, x, 2, y, 1);
  assert.throws(() => kn.matmulQ4(w, x.subarray(1), 2, y, 1), te, 'x too short');
  assert.throws(() => kn.matmulQ4(w, x, 2, y.subarray(1), 1), te, 'y too short');
  assert.throws(() => kn.matmulQ4(w, x, 2, new Float32Array(2 * n + 1), 1), te, 'y too long');
  assert.throws(() => kn.matmulQ4(w, x, 1, y, 1), te, 'x holds two rows, m says one');
  assert.throws(() => kn.matmulQ4(w, new Float64Array(2 * k) as never, 2, y, 1), te, 'x not a Float32Array');
  assert.throws(() => kn.matmulQ4(w, x, 0, new Float32Array(0), 1), te, 'm = 0');
  assert.throws(() => kn.matmulQ4(w, x, 2, y, 0), te, 'threads = 0');
  assert.throws(() => kn.matmulQ4({ k, n } as never, x, 2, y, 1), te, 'w not from packQ4');
});

test('SVC_NATIVE_KERNELS=0 turns them off, with that reason', () => {
  const code =
    `import('./src/runtime/kernels.ts').then((m) => console.log(JSON.stringify([m.nativeKernels() === undefined, m.nativeKernelsUnavailable()])))`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', code], {
    env: { ...process.env, SVC_NATIVE_KERNELS: '0' },
    encoding: 'utf8',
  });
  assert.deepEqual(JSON.parse(out), [true, 'disabled by SVC_NATIVE_KERNELS=0']);
});
