/**
 * q4 (MatMulNBits) and q8 quantization against independent judges: the weights against a numpy reading of
 * the MatMulNBits format (scripts/models/check-matmulnbits.py), the logits of ONNX Runtime running the
 * quantized graph against the fp32 graph.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { quantizeOnnx, toHalf } from '../../../src/services/models/onnx-quantize.ts';
import { unsignedJudge } from '../../support/unsigned-judge.ts';

const DIR = resolve('test/fixtures/models/tiny-llama/onnx');
const CONFIG = JSON.parse(readFileSync(resolve('test/fixtures/models/tiny-llama/config.json'), 'utf8'));

let tmp: string;
const files: Record<string, string> & { fake?: string } = {};
before(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'svc-q4-'));
  files.fp32 = join(DIR, 'model.onnx');
  for (const t of ['q4', 'q8'] as const) {
    const r = await quantizeOnnx(readFileSync(files.fp32), t, { dir: DIR });
    files[t] = join(tmp, `${t}.onnx`);
    writeFileSync(files[t], r.bytes);
  }
});
after(() => rmSync(tmp, { recursive: true, force: true }));

interface Check {
  matmulnbits: {
    weight: string;
    K: number;
    N: number;
    attrs: Record<string, number>;
    domain: string;
    inputs: number;
    max_err_over_half_scale: number;
    scale_max_rel_diff: number;
    codes_differing: number;
    dequant_max_abs_diff_vs_reference: number;
    rel_fro_err: number;
    rel_fro_err_absmax7: number;
    over_half_step_not_clamped: number;
  }[];
  gathers: { table: string; dtype: string; max_err_over_half_scale: number; scale_vs_absmax_over_127: number }[];
  fp32_matmuls_left: number;
  opsets: Record<string, number>;
}

describe('q4 weights against the MatMulNBits format, read by numpy', () => {
  let c: Check;
  before(() => {
    files.fake = join(tmp, 'fake-q4.onnx');
    const p = spawnSync('/usr/bin/python3', ['scripts/models/check-matmulnbits.py', files.fp32, files.q4, files.fake], {
      encoding: 'utf8',
    });
    assert.equal(p.status, 0, p.stderr);
    c = JSON.parse(p.stdout);
  });

  it('every weight MatMul (LM head included) is a MatMulNBits with int8-activation kernels', () => {
    const layers = CONFIG.num_hidden_layers as number;
    assert.equal(c.matmulnbits.length, layers * 7 + 1, 'q, k, v, o, gate, up, down per layer + LM head');
    assert.equal(c.fp32_matmuls_left, 0);
    assert.equal(c.opsets['com.microsoft'], 1);
    const head = c.matmulnbits.find((m) => m.N === CONFIG.vocab_size);
    assert.ok(head, 'the LM head is quantized');
    for (const m of c.matmulnbits) {
      assert.equal(m.domain, 'com.microsoft');
      assert.deepEqual({
        bits: m.attrs.bits,
        block_size: m.attrs.block_size,
        accuracy_level: m.attrs.accuracy_level,
        K: m.attrs.K,
        N: m.attrs.N,
      }, { bits: 4, block_size: 32, accuracy_level: 4, K: m.K, N: m.N });
      assert.equal(m.inputs, 3, 'no zero points: the format default 8 applies');
    }
  });

  it("codes and scales are llama.cpp's Q4_0 rounding (numpy, from its definition), within half a step of fp32 but where Q4_0 clamps", () => {
    // the stored scale is d rounded to a half (relative error at most 2^-11), which moves a code's value by up
    // to 8 steps times that: beyond half a step by at most 16 * 2^-11 of a half step
    for (const m of c.matmulnbits) {
      assert.ok(m.scale_max_rel_diff < 1e-6, `${m.weight}: scales differ from Q4_0's by ${m.scale_max_rel_diff}`);
      assert.equal(m.codes_differing, 0, `${m.weight}: ${m.codes_differing} 4-bit codes differ from numpy's`);
      assert.ok(m.dequant_max_abs_diff_vs_reference < 1e-7, `${m.weight}: dequantized differs by ${m.dequant_max_abs_diff_vs_reference}`);
      // the one clamped case: a value of the other sign at the block's full magnitude lands one step short
      assert.ok(
        m.max_err_over_half_scale <= 2 + 16 * 2 ** -11 + 1e-4,
        `${m.weight}: an element is ${m.max_err_over_half_scale} half-steps from fp32`,
      );
      assert.equal(m.over_half_step_not_clamped, 0, `${m.weight}: elements beyond half a step that Q4_0 does not clamp`);
      assert.ok(m.rel_fro_err < 0.15, `${m.weight}: relative error ${m.rel_fro_err}`);
    }
  });

  it("every weight is closer to fp32 than with transformers.js' recipe (scale max|w| / 7)", () => {
    for (const m of c.matmulnbits) {
      assert.ok(m.rel_fro_err < m.rel_fro_err_absmax7, `${m.weight}: ${m.rel_fro_err} against ${m.rel_fro_err_absmax7}`);
    }
    const mean = (k: 'rel_fro_err' | 'rel_fro_err_absmax7') => c.matmulnbits.reduce((a, m) => a + m[k], 0) / c.matmulnbits.length;
    assert.ok(mean('rel_fro_err') < 0.92 * mean('rel_fro_err_absmax7'), `${mean('rel_fro_err')} against ${mean('rel_fro_err_absmax7')}`);
  });

  it('the embedding table is int8 rows within half a step of fp32', () => {
    assert.equal(c.gathers.length, 1);
    const g = c.gathers[0]!;
    assert.equal(g.dtype, 'int8');
    assert.ok(g.max_err_over_half_scale <= 1 + 1e-4, `table error ${g.max_err_over_half_scale} half-steps`);
    assert.ok(Math.abs(g.scale_vs_absmax_over_127 - 1) < 1e-6);
  });
});

describe('scales rounded to half precision', () => {
  it("toHalf gives numpy's float16 rounding: ties to even, subnormal halves, zero and overflow", () => {
    const values: number[] = [
      65504,
      65519.99,
      65520,
      1e6,
      6.1e-5,
      5.96e-8,
      2.98e-8,
      2.99e-8,
      1e-9,
      -3e-6,
      0,
      1 + 2 ** -11,
      1 + 3 * 2 ** -11,
    ];
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 5000; i++) values.push(Math.fround((rand() - 0.5) * 10 ** Math.floor(rand() * 14 - 9)));
    // exact midpoints between neighbouring halves (ties), and their neighbours
    for (let i = 0; i < 500; i++) {
      const h = toHalf(Math.fround((rand() - 0.5) * 8));
      const up = toHalf(Math.fround(h + Math.abs(h) * 2 ** -10));
      const mid = Math.fround((h + up) / 2);
      values.push(mid, Math.fround(mid * (1 + 2 ** -20)), Math.fround(mid * (1 - 2 ** -20)));
    }
    const p = spawnSync('/usr/bin/python3', [
      '-c',
      [
        'import sys, json, numpy as np, warnings',
        'warnings.simplefilter("ignore")',
        'x = np.array(json.load(sys.stdin), np.float32)',
        'print(json.dumps([None if np.isinf(v) else float(v) for v in x.astype(np.float16).astype(np.float64)]))',
      ].join('\n'),
    ], { input: JSON.stringify(values.map(Math.fround)), encoding: 'utf8', maxBuffer: 1 << 24 });
    assert.equal(p.status, 0, p.stderr);
    const want: (number | null)[] = JSON.parse(p.stdout);
    values.forEach((v, i) => {
      const w = want[i] ?? (v < 0 ? -Infinity : Infinity);
      assert.equal(toHalf(Math.fround(v)), w, `toHalf(${Math.fround(v)})`);
    });
  });
});

describe('quantized logits against fp32 under ONNX Runtime', () => {
  const ids = [5, 17, 42, 99, 123, 7, 250, 31, 64, 400, 12, 3, 77, 150, 201, 333];
  const kv = CONFIG.num_key_value_heads as number;
  const hd = CONFIG.head_dim as number;
  const logits = async (file: string | Uint8Array) => {
    const s = await ort.InferenceSession.create(file as string, { intraOpNumThreads: 1 });
    const i64 = (xs: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
    const feeds: Record<string, ort.Tensor> = {
      input_ids: i64(ids),
      attention_mask: i64(ids.map(() => 1)),
      position_ids: i64(ids.map((_, i) => i)),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(0n), []), // 0: logits of every position
    };
    for (let l = 0; l < CONFIG.num_hidden_layers; l++) {
      for (const kind of ['key', 'value']) {
        feeds[`past_key_values.${l}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), [1, kv, 0, hd]);
      }
    }
    const out = (await s.run(feeds)).logits!;
    await s.release();
    return out.data as Float32Array;
  };
  const cosine = (a: Float32Array, b: Float32Array) => {
    let ab = 0, aa = 0, bb = 0;
    for (let i = 0; i < a.length; i++) {
      ab += a[i]! * b[i]!;
      aa += a[i]! * a[i]!;
      bb += b[i]! * b[i]!;
    }
    return ab / Math.sqrt(aa * bb);
  };
  const argmaxRows = (x: Float32Array, v: number) =>
    Array.from({ length: x.length / v }, (_, r) => {
      let best = 0;
      for (let j = 1; j < v; j++) if (x[r * v + j]! > x[r * v + best]!) best = j;
      return best;
    });

  const perPosition = (a: Float32Array, b: Float32Array, v: number) => {
    let worst = 1;
    for (let r = 0; r < ids.length; r++) worst = Math.min(worst, cosine(a.subarray(r * v, (r + 1) * v), b.subarray(r * v, (r + 1) * v)));
    const ta = argmaxRows(a, v), tb = argmaxRows(b, v);
    return { worst, whole: cosine(a, b), same: ta.filter((x, r) => x === tb[r]).length };
  };
  const v = CONFIG.vocab_size as number;

  it('the q4 graph computes the fp32 graph with numpy-dequantized weights (int8 activations aside)', async () => {
    assert.ok(files.fake, 'the numpy check wrote the fake-quantized graph');
    const fake = await logits(files.fake!);
    const exact = perPosition(fake, await logits(`${files.fake}.level0.onnx`), v);
    const r = perPosition(fake, await logits(files.q4), v);
    console.log(
      `q4 vs numpy fake-quant: accuracy_level 0 worst cosine ${exact.worst.toFixed(6)}; level 4 worst ${
        r.worst.toFixed(5)
      }, argmax kept ${r.same}/${ids.length}`,
    );
    assert.ok(exact.worst >= 0.99999, `fp32 activations: cosine ${exact.worst}`);
    assert.equal(exact.same, ids.length);
    // level 4 quantizes activations to int8 per block of 32: a small, bounded extra error
    assert.ok(r.worst >= 0.99, `cosine ${r.worst}`);
    assert.ok(r.same >= ids.length - 1, `argmax kept at ${r.same}/${ids.length}`);
  });

  it('q8 logits keep cosine ≥ 0.98 with fp32 at every position; q4 stays correlated', async () => {
    const f = await logits(files.fp32);
    // run with uint8 weights, as ONNX Runtime computes them exactly on every x64 CPU (test/support/unsigned-judge.ts)
    const q8 = perPosition(f, await logits(unsignedJudge(readFileSync(files.q8))), v);
    const q4 = perPosition(f, await logits(files.q4), v);
    console.log(
      `vs fp32: q8 worst ${q8.worst.toFixed(4)} whole ${q8.whole.toFixed(4)} argmax ${q8.same}/${ids.length}; q4 worst ${
        q4.worst.toFixed(4)
      } whole ${q4.whole.toFixed(4)} argmax ${q4.same}/${ids.length}`,
    );
    // per-column weight scales; the rest is the per-tensor uint8 activations (per-tensor weights gave 0.969)
    assert.ok(q8.worst >= 0.98, `q8: cosine ${q8.worst}`);
    assert.ok(q8.same >= ids.length - 2, `q8: argmax kept at ${q8.same}/${ids.length}`);
    // 4-bit weights carry ~10 % relative error each (checked above); this random 2-layer model has no
    // redundancy to absorb it, so only a clear correlation is required of the whole logits
    assert.ok(q4.whole >= 0.7, `q4: cosine ${q4.whole}`);
  });
});
