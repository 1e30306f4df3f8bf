/**
 * What the benchmark scripts share: medians, the machine line with the load average each run was taken
 * under (printed at the start, written into every table), the tiny fixture models' specs, and the seeded
 * vector generator of the search benchmarks.
 */
import { cpus, loadavg } from 'node:os';
import type { Task } from '../../src/services/inference/load.ts';
import { seededRandom } from '../../test/support/embedding-corpus.ts';

/** Median of a list (the upper one of an even count). */
export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Median wall time in milliseconds of `runs` calls of `fn` (each awaited). */
export async function medianTime(fn: () => unknown | Promise<unknown>, runs: number): Promise<number> {
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    await fn();
    t.push(performance.now() - s);
  }
  return median(t);
}

const loadNow = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const START_LOAD = loadNow();
console.log(`load average at start: ${START_LOAD}`);

/** The load averages (1, 5, 15 min) at the start of the run and now, for the table's text. */
export const loadNote = (): string => `load average ${START_LOAD} at the start, ${loadNow()} at the end`;

/** "2 × AMD EPYC …, Node v20…; load average … at the start, … at the end". */
export const machineNote = (): string => `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'}, Node ${process.version}; ${loadNote()}`;

/** The inference engine's spec of one of the tiny fixture models (test/fixtures/models), full precision. */
export const fixtureModel = <T extends Task>(name: string, task: T) => ({
  name,
  dir: `test/fixtures/models/${name}`,
  task,
  dtype: 'fp32' as const,
});

/** A seeded generator of unit vectors (mulberry32 and Box–Muller), so corpora are the same every run. */
export function seededVectors(seed: number) {
  const rand = seededRandom(seed);
  const normal = () => Math.sqrt(-2 * Math.log(rand() || 1e-12)) * Math.cos(2 * Math.PI * rand());
  const unit = (v: Float32Array) => {
    let n = 0;
    for (const x of v) n += x * x;
    n = Math.sqrt(n);
    for (let i = 0; i < v.length; i++) v[i]! /= n;
    return v;
  };
  /** A unit vector near `c` (per-dimension noise `spread`). */
  const around = (c: Float32Array, spread: number) => unit(Float32Array.from(c, (x) => x + spread * normal()));
  return { rand, normal, unit, around };
}
