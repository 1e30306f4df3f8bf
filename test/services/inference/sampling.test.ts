/**
 * The sampler draws from the distribution its definition gives: logits sorted (value desc, index asc), the
 * first top_k kept, softmax at the temperature, then the shortest prefix holding top_p of the mass. The
 * judge is numpy (the same definition written with a full sort), and the draws are checked by chi-square and
 * by never landing outside the kept set.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { argmax, createSamplerProcessor, expNeg, keptTokens, seededRandom } from '../../../src/services/inference/sampling.ts';

const JUDGE = `
import json, sys
import numpy as np
cases = json.load(sys.stdin)
out = []
for c in cases:
    x = np.array([-np.inf if v is None else v for v in c["logits"]], dtype=np.float32).astype(np.float64)
    idx = np.arange(len(x))
    finite = np.isfinite(x)
    order = np.lexsort((idx[finite], -x[finite]))
    kept = idx[finite][order]
    if c["k"] > 0:
        kept = kept[: c["k"]]
    w = np.exp((x[kept] - x[kept].max()) / c["t"])
    if c["p"] < 1:
        cum = np.cumsum(w)
        n = int(np.searchsorted(cum, c["p"] * w.sum())) + 1
        kept, w = kept[:n], w[:n]
    p = np.zeros(len(x))
    p[kept] = w / w.sum()
    out.append(p.tolist())
print(json.dumps(out))
`;
/** numpy's probability of every token (-Infinity goes as null: JSON has no infinities). */
const judge = (cases: { logits: Float32Array; t: number; k: number; p: number }[]): number[][] =>
  JSON.parse(
    execFileSync('/usr/bin/python3', ['-c', JUDGE], {
      input: JSON.stringify(cases.map((c) => ({ ...c, logits: [...c.logits].map((v) => (v === -Infinity ? null : v)) }))),
      maxBuffer: 1 << 30,
    }).toString(),
  );

/** Logits spread like a model's, a few -Infinity, on a grid (ties) when asked, `boost` added to 1 in 100. */
function logitsOf(n: number, seed: number, grid = 0, boost = 0): Float32Array {
  const r = seededRandom(seed);
  return Float32Array.from({ length: n }, (_, i) => {
    if (i % 97 === 13) return -Infinity;
    const v = (r() + r() + r() - 1.5) * 3 + (r() < 0.01 ? boost : 0);
    return grid ? Math.round(v / grid) * grid : v;
  });
}

/** Draw `n` tokens with the sampler's own path (the batch decoder's `draw`), counts per token. */
function draws(logits: Float32Array, t: number, k: number, p: number, n: number, seed: number): Float64Array {
  const s = createSamplerProcessor({ temperature: t, topK: k, topP: p, seed })!;
  const counts = new Float64Array(logits.length);
  for (let i = 0; i < n; i++) counts[s.draw(logits)]++;
  return counts;
}

/** Pearson's chi-square over cells with an expected count ≥ 5 (the rest pooled), and its degrees of freedom. */
function chiSquare(counts: Float64Array, probs: number[], n: number): { chi: number; df: number } {
  let chi = 0, df = -1, poolE = 0, poolO = 0;
  probs.forEach((q, i) => {
    const e = q * n;
    if (e >= 5) (chi += (counts[i]! - e) ** 2 / e), df++;
    else (poolE += e), (poolO += counts[i]!);
  });
  if (poolE >= 5) (chi += (poolO - poolE) ** 2 / poolE), df++;
  return { chi, df };
}

describe('sampler', () => {
  const CASES = [
    { name: 'top_k 20, top_p 0.8, temperature 0.7', t: 0.7, k: 20, p: 0.8, grid: 0, boost: 0 },
    { name: 'top_p 0.9, a few strong tokens', t: 1, k: 0, p: 0.9, grid: 0, boost: 5 },
    { name: 'temperature 1.3 alone', t: 1.3, k: 0, p: 1, grid: 0, boost: 4 },
    { name: 'top_k 50 at temperature 0.5', t: 0.5, k: 50, p: 1, grid: 0, boost: 0 },
    { name: 'top_p 0.5 with ties at the boundary', t: 1, k: 0, p: 0.5, grid: 0.25, boost: 0 },
    { name: 'top_k 30 with ties at the k-th logit', t: 0.8, k: 30, p: 1, grid: 0.5, boost: 0 },
  ];
  const N = 40_000;
  const inputs = CASES.map((c, i) => ({ ...c, logits: logitsOf(1500, 11 + i, c.grid, c.boost) }));
  const expected = judge(inputs);

  inputs.forEach((c, i) => {
    it(`${c.name}: draws follow numpy's distribution and never leave the kept set`, () => {
      const probs = expected[i]!;
      const counts = draws(c.logits, c.t, c.k, c.p, N, 1000 + i);
      const outside = [...counts.keys()].filter((j) => counts[j]! > 0 && probs[j] === 0);
      assert.deepEqual(outside, [], 'tokens drawn that the definition excludes');
      const { chi, df } = chiSquare(counts, probs, N);
      assert.ok(df >= 3, `too few cells (${df}) for the test to mean anything`);
      // mean df, sd sqrt(2 df): 6 sd above is far outside chance
      assert.ok(chi < df + 6 * Math.sqrt(2 * df), `chi-square ${chi.toFixed(1)} with ${df} degrees of freedom`);
    });
  });

  it('a vocabulary of 151936: top_p 0.9 keeps exactly numpy’s nucleus', () => {
    const logits = logitsOf(151_936, 5);
    for (let i = 0; i < 300; i++) logits[i * 500] = logits[i * 500]! + 9; // a nucleus of a few hundred tokens
    const [probs] = judge([{ logits, t: 1, k: 0, p: 0.9 }]);
    const counts = draws(logits, 1, 0, 0.9, 4000, 3);
    const inNucleus = probs!.filter((q) => q > 0).length;
    assert.ok(inNucleus > 50 && inNucleus < 151_936, `nucleus of ${inNucleus}`);
    assert.deepEqual([...counts.keys()].filter((j) => counts[j]! > 0 && probs![j] === 0), []);
    const { chi, df } = chiSquare(counts, probs!, 4000);
    assert.ok(chi < df + 6 * Math.sqrt(2 * df), `chi-square ${chi.toFixed(1)} with ${df} degrees of freedom`);
  });

  it('nearly flat logits (a random model’s): the kept set is numpy’s, token for token', () => {
    // 151936 logits within ±0.45: they crowd into a few buckets, which are bucketed again
    const r = seededRandom(8);
    const flat = Float32Array.from({ length: 151_936 }, () => (r() + r() + r() - 1.5) * 0.3);
    for (let i = 0; i < 2000; i++) flat[i * 70] = flat[(i * 70 + 35) % flat.length]!; // exact ties across the vocabulary
    const cases = [{ t: 1, k: 0, p: 0.5 }, { t: 0.7, k: 0, p: 0.95 }, { t: 1, k: 5000, p: 0.3 }];
    const probs = judge(cases.map((c) => ({ ...c, logits: flat })));
    cases.forEach((c, i) => {
      const want = [...probs[i]!.keys()].filter((j) => probs[i]![j]! > 0);
      const got = keptTokens(flat, c.t, c.k, c.p);
      assert.ok(want.length > 1000, `numpy keeps ${want.length}`);
      assert.equal(got.length, want.length, `${JSON.stringify(c)}: kept ${got.length}, numpy ${want.length}`);
      assert.deepEqual(got, want);
    });
  });

  it('the same seed draws the same tokens; the processor leaves only the drawn token finite', () => {
    const logits = logitsOf(5000, 9);
    const a = createSamplerProcessor({ temperature: 0.9, topP: 0.95, seed: 42 })!;
    const b = createSamplerProcessor({ temperature: 0.9, topP: 0.95, seed: 42 })!;
    const drawn = Array.from({ length: 50 }, () => a.draw(logits));
    for (const token of drawn) {
      const data = logits.slice();
      b([[1n]], { data, dims: [1, data.length] });
      assert.deepEqual([...data.keys()].filter((j) => data[j]! > -Infinity), [token]);
    }
    assert.ok(new Set(drawn).size > 5, 'a sampler at temperature 0.9 varies');
  });

  it('argmax: the first of equal maxima; NaN and -Infinity never win; any length', () => {
    const cases: [number[], number][] = [
      [[1, 3, 3, 2], 1],
      [[NaN, -1, NaN, -0.5, -0.5], 3],
      [[-Infinity, -Infinity], 0],
      [[], 0],
      [[0, 0, 0, 0, 0, 7], 5],
      [[5, 4, 3, 2, 1, 9, 9], 5],
    ];
    for (const [data, want] of cases) assert.equal(argmax(Float32Array.from(data)), want, JSON.stringify(data));
    const big = logitsOf(151_937, 2);
    let best = 0;
    big.forEach((v, i) => v > big[best]! && (best = i));
    assert.equal(argmax(big), best);
  });

  it('expNeg agrees with Math.exp to 2e-8 over the range it is used on', () => {
    let worst = 0;
    for (let x = -40; x <= 0; x += 1e-4) worst = Math.max(worst, Math.abs(expNeg(x) / Math.exp(x) - 1));
    assert.ok(worst < 2e-8, `relative error ${worst}`);
    assert.equal(expNeg(0), 1);
  });
});
