/**
 * The native kernels' attention (src/runtime/kernels.ts `attention`), judged by ONNX Runtime running attention as
 * decoder exporters write it, built here by the `onnx` package from plain operators: heads split by Reshape and
 * Transpose, rotate_half with cos and sin gathered at each position, the new keys and values concatenated to the
 * cache, the key/value heads repeated (Unsqueeze, Expand, Reshape), scores divided by √d, the mask added, Softmax,
 * the values summed, the heads joined.
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

function addon() {
  const k = nativeKernels();
  assert.ok(k, `native kernels did not load: ${nativeKernelsUnavailable()}`);
  return k;
}

/** svc's WASM kernels (native/kernels/wasm.c: attention.c's plain path), the build the engine takes, judged by the same tests. */
function wasm() {
  const k = wasmKernels();
  assert.ok(k, `WASM kernels did not load: ${wasmKernelsUnavailable()}`);
  return k;
}

const BUILD = `
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
H, KV, D, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
G = H // KV
nodes = []
def c(name, v, dt=np.int64):
    nodes.append(helper.make_node('Constant', [], [name], value=numpy_helper.from_array(np.array(v, dtype=dt))))
    return name
def n(op, ins, outs, **kw):
    nodes.append(helper.make_node(op, ins, outs, **kw))
    return outs[0]
def heads(x, h, name):
    return n('Transpose', [n('Reshape', [x, c(name + '_shape', [0, 0, h, D])], [name + '_r'])], [name], perm=[0, 2, 1, 3])
def table(t):
    half = n('Gather', [t, 'pos'], [t + '_g'])
    return n('Unsqueeze', [n('Concat', [half, half], [t + '_full'], axis=-1), c(t + '_ax', [1])], [t + '_u'])
cos, sin = table('cos'), table('sin')
def rotate(x):
    a = n('Slice', [x, c(x + '_s0', [0]), c(x + '_s1', [D // 2]), c(x + '_ax3', [3])], [x + '_a'])
    b = n('Slice', [x, c(x + '_s2', [D // 2]), c(x + '_s3', [D]), x + '_ax3'], [x + '_b'])
    turned = n('Concat', [n('Neg', [b], [x + '_nb']), a], [x + '_half'], axis=3)
    return n('Add', [n('Mul', [x, cos], [x + '_c']), n('Mul', [turned, sin], [x + '_s'])], [x + '_rot'])
q, k, v = rotate(heads('q', H, 'qh')), rotate(heads('k', KV, 'kh')), heads('v', KV, 'vh')
n('Identity', [k], ['new_k']); n('Identity', [v], ['new_v'])
def repeat(x):
    u = n('Unsqueeze', [x, c(x + '_ax2', [2])], [x + '_u'])
    e = n('Expand', [u, c(x + '_ex', [1, 1, G, 1, 1])], [x + '_e'])
    return n('Reshape', [e, c(x + '_heads', [0, H, -1, D])], [x + '_rep'])
keys = repeat(n('Concat', ['past_k', k], ['all_k'], axis=2))
values = repeat(n('Concat', ['past_v', v], ['all_v'], axis=2))
s = n('Div', [n('MatMul', [q, n('Transpose', [keys], ['kt'], perm=[0, 1, 3, 2])], ['qk']), c('scale', np.sqrt(D), np.float32)], ['scores'])
p = n('Softmax', [n('Add', [s, 'mask'], ['masked'])], ['p'], axis=-1)
o = n('Transpose', [n('MatMul', [p, values], ['pv'])], ['ot'], perm=[0, 2, 1, 3])
n('Reshape', [o, c('joined', [0, 0, H * D])], ['out'])
f = lambda name, dims: helper.make_tensor_value_info(name, T.FLOAT, dims)
ins = [f('q', ['b', 's', H * D]), f('k', ['b', 's', KV * D]), f('v', ['b', 's', KV * D]), helper.make_tensor_value_info('pos', T.INT64, ['b', 's']),
  f('cos', ['r', D // 2]), f('sin', ['r', D // 2]), f('past_k', ['b', KV, 'p', D]), f('past_v', ['b', KV, 'p', D]), f('mask', ['b', 1, 's', 't'])]
outs = [f('out', ['b', 's', H * D]), f('new_k', ['b', KV, 's', D]), f('new_v', ['b', KV, 's', D])]
m = helper.make_model(helper.make_graph(nodes, 'attention', ins, outs), opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 8
onnx.save(m, out)
`;

const dir = mkdtempSync(join(tmpdir(), 'attention-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Uniform values in [-a, a) from a small linear congruential generator (no Math.random: failures reproduce). */
function values(n: number, seed: number, a = 1): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5) * 2 * a);
}

/** Largest difference relative to the largest magnitude of `want`. */
function relMax(got: Float32Array, want: Float32Array): number {
  let d = 0, m = 0;
  for (let i = 0; i < want.length; i++) (d = Math.max(d, Math.abs(got[i]! - want[i]!))), (m = Math.max(m, Math.abs(want[i]!)));
  return d / m;
}

const MASKED = -3.4028234663852886e38; // float32's lowest, as exporters fill masked positions

for (const [heads, kvHeads, d] of [[14, 2, 64], [4, 2, 8], [4, 4, 128]] as const) {
  const file = join(dir, `attention-${heads}-${kvHeads}-${d}.onnx`);
  const session = (async () => {
    execFileSync('/usr/bin/python3', ['-c', BUILD, String(heads), String(kvHeads), String(d), file]);
    return ort.InferenceSession.create(file, { intraOpNumThreads: 1 });
  })();
  after(async () => (await session).release());

  // the last: enough work for the kept threads (units × positions ≥ 2048; fewer stay on the calling thread)
  for (const [b, s, past] of [[1, 1, 0], [3, 1, 37], [2, 5, 9], [2, 4, 300]] as const) {
    test(`${heads} heads over ${kvHeads}, d ${d}: ${b} rows of ${s} new after ${past}, one left-padded, as ONNX Runtime's graph`, async () => {
      const t = past + s, rows = 300;
      const q = values(b * s * heads * d, 1, 3), k = values(b * s * kvHeads * d, 2, 3), v = values(b * s * kvHeads * d, 3);
      const pastK = values(b * kvHeads * past * d, 4, 3), pastV = values(b * kvHeads * past * d, 5);
      const angles = values(rows * d / 2, 6, Math.PI);
      const cos = angles.map(Math.cos), sin = angles.map(Math.sin);
      // row r: positions 40r + j (any rows of the caches); the last row left-padded by 2 (their keys masked), the
      // first one's cache 3 positions longer than the row (a capacity past its length: masked too)
      const pos = BigInt64Array.from({ length: b * s }, (_, i) => BigInt(40 * Math.floor(i / s) + (i % s) + 3));
      const mask = new Float32Array(b * s * t).map((_, i) => {
        const r = Math.floor(i / (s * t)), j = Math.floor(i / t) % s, at = i % t;
        const pad = r === b - 1 && b > 1 && at < Math.min(2, past), capacity = r === 0 && b > 1 && at < past && at >= past - 3;
        return at > past + j || pad || capacity ? MASKED : 0;
      });
      const f = (data: Float32Array, dims: number[]) => new ort.Tensor('float32', data, dims);
      const want = await (await session).run({
        q: f(q, [b, s, heads * d]),
        k: f(k, [b, s, kvHeads * d]),
        v: f(v, [b, s, kvHeads * d]),
        pos: new ort.Tensor('int64', pos, [b, s]),
        cos: f(cos, [rows, d / 2]),
        sin: f(sin, [rows, d / 2]),
        past_k: f(pastK, [b, kvHeads, past, d]),
        past_v: f(pastV, [b, kvHeads, past, d]),
        mask: f(mask, [b, 1, s, t]),
      });
      for (
        const [kernels, portable, threads] of [[addon, false, 1], [addon, true, 1], [addon, false, 3], [wasm, false, 1], [
          wasm,
          false,
          2,
        ]] as const
      ) {
        const out = new Float32Array(q.length), newK = new Float32Array(k.length), newV = new Float32Array(v.length);
        kernels().attention(
          { q, k, v, pos, cos, sin, pastK, pastV, mask, out, newK, newV },
          s,
          heads,
          kvHeads,
          d,
          Math.sqrt(d),
          threads,
          portable,
        );
        const path = `${portable ? 'portable' : kernels().path}, ${threads} thread(s)`;
        // other sums in another order (and the AVX-512 path's own e^x): agreement to float rounding
        assert.ok(relMax(out, want.out!.data as Float32Array) < 2e-6, `${path} out: ${relMax(out, want.out!.data as Float32Array)}`);
        assert.ok(relMax(newK, want.new_k!.data as Float32Array) < 1e-6, `${path} new keys`);
        assert.deepEqual(newV, want.new_v!.data, `${path} new values`);
      }
    });
  }
}

for (const kernels of [addon, wasm]) {
  test(`${kernels.name}: attention refuses arrays that do not agree, and a position outside the rotary caches`, () => {
    const k = kernels();
    const a = (over: Record<string, unknown> = {}) =>
      ({
        q: new Float32Array(8),
        k: new Float32Array(8),
        v: new Float32Array(8),
        pos: new BigInt64Array([0n]),
        cos: new Float32Array(4),
        sin: new Float32Array(4),
        pastK: new Float32Array(0),
        pastV: new Float32Array(0),
        mask: new Float32Array(1),
        out: new Float32Array(8),
        newK: new Float32Array(8),
        newV: new Float32Array(8),
        ...over,
      }) as never;
    k.attention(a(), 1, 1, 1, 8, 1, 1);
    assert.throws(() => k.attention(a({ mask: new Float32Array(2) }), 1, 1, 1, 8, 1, 1), /mask must hold/);
    assert.throws(() => k.attention(a({ out: new Float32Array(7) }), 1, 1, 1, 8, 1, 1), TypeError);
    assert.throws(() => k.attention(a(), 1, 3, 2, 8, 1, 1), TypeError);
    assert.throws(() => k.attention(a({ pos: new Float32Array(1) }), 1, 1, 1, 8, 1, 1), /BigInt64Array/);
    assert.throws(() => k.attention(a({ pos: new BigInt64Array([1n]) }), 1, 1, 1, 8, 1, 1), RangeError);
    assert.throws(() => k.attention(a(), 1, 1, 1, 8, 1, 0), /threads/);
  });
}

// A row decoding in a batch has the batch's layout: left padding up to the longest row, the cache's capacity past
// the longest length, both hidden by the mask (exporters fill it with float32's lowest, -infinity or -1e9). Its
// output must be the bits it gets alone, or a greedy stream would answer differently under load.
for (const hidden of [MASKED, -Infinity, -1e9]) {
  test(`a row's attention is the same bits alone and in a batch's layout (hidden positions masked with ${hidden})`, () => {
    const [heads, kvHeads, d, s, past] = [14, 2, 64, 1, 45];
    const q = values(s * heads * d, 11, 3), k = values(s * kvHeads * d, 12, 3), v = values(s * kvHeads * d, 13);
    const pastK = values(kvHeads * past * d, 14, 3), pastV = values(kvHeads * past * d, 15);
    const angles = values(64 * d / 2, 16, Math.PI);
    const cos = angles.map(Math.cos), sin = angles.map(Math.sin);
    const pos = BigInt64Array.of(BigInt(past));
    /** The row as row `r` of 2, its cache at `pad` after `pad` hidden positions, `spare` hidden ones after it. */
    const laidOut = (r: number, pad: number, spare: number) => {
      const p = pad + past + spare, rows = 2;
      const cache = (own: Float32Array, seed: number) => {
        const all = values(rows * kvHeads * p * d, seed); // the other row's keys and values, and whatever the hidden ones hold
        for (let h = 0; h < kvHeads; h++) all.set(own.subarray(h * past * d, (h + 1) * past * d), ((r * kvHeads + h) * p + pad) * d);
        return all;
      };
      const mask = new Float32Array(rows * s * (p + s)).map((_, i) => {
        const at = i % (p + s);
        return Math.floor(i / (p + s)) === r && (at < pad || (at >= pad + past && at < p)) ? hidden : 0;
      });
      const placed = (a: Float32Array, seed: number) => {
        const all = values(rows * a.length, seed);
        all.set(a, r * a.length);
        return all;
      };
      return {
        arrays: {
          q: placed(q, 21),
          k: placed(k, 22),
          v: placed(v, 23),
          pos: BigInt64Array.from({ length: rows }, () => pos[0]!),
          cos,
          sin,
          pastK: cache(pastK, 24),
          pastV: cache(pastV, 25),
          mask,
          out: new Float32Array(rows * s * heads * d),
          newK: new Float32Array(rows * s * kvHeads * d),
          newV: new Float32Array(rows * s * kvHeads * d),
        },
        row: (a: Float32Array) => a.subarray(r * s * heads * d, (r + 1) * s * heads * d),
      };
    };
    for (const [kernels, portable, threads] of [[addon, false, 1], [addon, true, 1], [addon, false, 3], [wasm, false, 1]] as const) {
      const alone = { q, k, v, pos, cos, sin, pastK, pastV, mask: new Float32Array(past + s), out: new Float32Array(q.length) };
      kernels().attention(
        { ...alone, newK: new Float32Array(k.length), newV: new Float32Array(v.length) },
        s,
        heads,
        kvHeads,
        d,
        8,
        1,
        portable,
      );
      for (const [r, pad, spare] of [[1, 7, 0], [0, 0, 6], [1, 13, 5]] as const) {
        const { arrays, row } = laidOut(r, pad, spare);
        kernels().attention(arrays, s, heads, kvHeads, d, 8, threads, portable);
        const path = `${portable ? 'portable' : kernels().path}, ${threads} thread(s), row ${r} after ${pad} hidden, ${spare} spare`;
        assert.deepEqual(row(arrays.out), alone.out, path);
      }
    }
  });
}
