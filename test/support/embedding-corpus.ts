/**
 * A generated stand-in for sentence embeddings (no trained embedding model can be downloaded here):
 * a normalised, anisotropic Gaussian mixture with the structure real embeddings have, and not the uniform
 * noise that is the worst case for any graph index.
 *
 * - `topics` topic directions (random unit vectors) and `clusters` cluster centres, each its topic plus
 *   noise of norm about 0.8 (centres of one topic: cosine ≈ 0.6);
 * - inside a cluster, variation along `rank` directions of its own with decaying spread (σⱼ = 0.35 / √(j+1),
 *   so a few directions carry most of it: a low intrinsic dimension, like paraphrases of one subject),
 *   plus isotropic noise (σ = 0.01 per dimension);
 * - a component shared by every vector (norm `shared`), as trained models' embeddings share a mean
 *   direction (unrelated texts still have a positive cosine: about 0.1 to 0.7 depending on the model);
 * - every vector normalised to unit length. A chunk's cosine to its cluster centre is about 0.8.
 *
 * Queries are fresh draws from the same mixture (not copies of stored vectors). Deterministic (mulberry32).
 */
export interface EmbeddingCorpus {
  dims: number;
  topics: number;
  clusters: number;
  rank: number;
  shared: number;
  /** A new vector: a random cluster's centre plus its in-cluster variation. */
  draw(): Float32Array;
  rand(): number;
}

/** A deterministic uniform [0, 1) generator (mulberry32): the one sampling uses. */
export { seededRandom } from '../../src/services/inference/sampling.ts';
import { seededRandom } from '../../src/services/inference/sampling.ts';

export function embeddingCorpus(
  o: { dims: number; topics: number; clusters: number; rank: number; shared: number; seed: number },
): EmbeddingCorpus {
  const rand = seededRandom(o.seed);
  const normal = () => Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
  const D = o.dims;
  const unit = (v: Float32Array) => {
    let n = 0;
    for (const x of v) n += x * x;
    n = Math.sqrt(n) || 1;
    for (let i = 0; i < v.length; i++) v[i]! /= n;
    return v;
  };
  const gaussian = () => unit(Float32Array.from({ length: D }, normal));
  const shared = gaussian().map((x) => o.shared * x);
  const topicDirs = Array.from({ length: o.topics }, gaussian);
  const centreNoise = 0.8 / Math.sqrt(D);
  const centres = Array.from({ length: o.clusters }, () => {
    const t = topicDirs[Math.floor(rand() * o.topics)]!;
    return unit(Float32Array.from(t, (x) => x + centreNoise * normal()));
  });
  // the in-cluster directions of all clusters in one buffer: clusters × rank × dims
  const dirs = new Float32Array(o.clusters * o.rank * D);
  for (let k = 0; k < o.clusters * o.rank; k++) dirs.set(gaussian(), k * D);
  const spread = Array.from({ length: o.rank }, (_, j) => 0.35 / Math.sqrt(j + 1));
  const draw = () => {
    const c = Math.floor(rand() * o.clusters);
    const v = Float32Array.from(centres[c]!);
    for (let j = 0; j < o.rank; j++) {
      const a = spread[j]! * normal();
      const base = (c * o.rank + j) * D;
      for (let i = 0; i < D; i++) v[i]! += a * dirs[base + i]!;
    }
    for (let i = 0; i < D; i++) v[i]! += shared[i]! + 0.01 * normal();
    return unit(v);
  };
  return { dims: D, topics: o.topics, clusters: o.clusters, rank: o.rank, shared: o.shared, draw, rand };
}
