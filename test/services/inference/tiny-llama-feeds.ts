/**
 * Feeds for the tiny-llama graph called directly with onnxruntime-node, and the comparison the tests that cut
 * its graph (lm-head, weight-split) judge by.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { TINY_LLAMA } from './fixtures.ts';

export const config = JSON.parse(readFileSync(join(TINY_LLAMA, 'config.json'), 'utf8'));
export const layers: number = config.num_hidden_layers;

export const i64 = (xs: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), dims);

/** An empty past for every layer, for `rows` rows. */
export function emptyPast(rows: number): Record<string, ort.Tensor> {
  return Object.fromEntries(
    Array.from({ length: layers }, (_, l) => ['key', 'value'].map((kv) => `past_key_values.${l}.${kv}`)).flat().map((n) => [
      n,
      new ort.Tensor('float32', new Float32Array(0), [rows, config.num_key_value_heads, 0, config.head_dim]),
    ]),
  );
}

/** Largest difference relative to the largest magnitude of `want`. */
export function relMax(got: Float32Array, want: Float32Array): number {
  assert.equal(got.length, want.length);
  let d = 0, m = 0;
  for (let i = 0; i < want.length; i++) (d = Math.max(d, Math.abs(got[i]! - want[i]!))), (m = Math.max(m, Math.abs(want[i]!)));
  return d / m;
}
