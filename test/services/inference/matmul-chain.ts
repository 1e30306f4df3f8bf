/**
 * A graph that computes for long from a few hundred bytes, and the check that a session's runs leave the
 * event loop free (sessions run in the inference thread: src/services/inference/ort-thread.ts).
 */
import assert from 'node:assert/strict';
import { ONNX, WireWriter } from '../../../src/services/models/onnx-wire.ts';

/** Y = X·X·X·X for a float input X [n, n]: long runs from a graph of a few hundred bytes. */
export function matmulChain(): Uint8Array {
  const s = (w: WireWriter, no: number, v: string) => w.string(no, v);
  const valueInfo = (name: string) => {
    const shape = new WireWriter();
    for (const d of ['n', 'n']) shape.message(1, new WireWriter().string(2, d));
    const tensorType = new WireWriter().varint(1, ONNX.dtype.FLOAT).message(2, shape);
    return s(new WireWriter(), 1, name).message(2, new WireWriter().message(1, tensorType));
  };
  const g = new WireWriter();
  const names = ['X', 'A', 'B', 'Y'];
  for (let i = 0; i < 3; i++) {
    const n = new WireWriter();
    s(n, 1, names[i]!);
    s(n, 1, 'X');
    s(n, 2, names[i + 1]!);
    s(n, 4, 'MatMul');
    g.message(1, n);
  }
  s(g, 2, 'chain');
  g.message(11, valueInfo('X')).message(12, valueInfo('Y'));
  return new WireWriter().varint(1, 8).message(8, new WireWriter().string(1, '').varint(2, 13)).message(7, g).finish();
}

/** Resolves `work`, with the longest gap (ms) between the ticks of a 2 ms interval timer meanwhile. */
export async function longestLoopGap<T>(work: () => Promise<T>): Promise<{ value: T; gap: number }> {
  let last = performance.now();
  let gap = 0;
  const tick = setInterval(() => {
    const t = performance.now();
    gap = Math.max(gap, t - last);
    last = t;
  }, 2);
  try {
    return { value: await work(), gap };
  } finally {
    clearInterval(tick);
  }
}

/**
 * Runs `run` (X⁴ of an n×n matrix) back to back, as a decode loop does, until they took 300 ms or more,
 * while a 2 ms interval timer records the longest gap between its ticks; on the event loop the loop would
 * stall for a whole run. Also checks one entry of the product against plain JS.
 */
export async function loopStaysFree(run: (x: Float32Array, n: number) => Promise<Float32Array>, n = 640): Promise<void> {
  const x = new Float32Array(n * n).map((_, i) => ((i * 7919) % 13) / 13 - 0.5);
  const t0 = performance.now();
  let runs = 0;
  let out!: Float32Array;
  const { gap } = await longestLoopGap(async () => {
    while (runs < 3 || (performance.now() - t0 < 300 && runs < 50)) (out = await run(x, n)), runs++;
  });
  const perRun = (performance.now() - t0) / runs;
  assert.ok(perRun >= 20, `a run took ${perRun.toFixed(0)} ms: too short to tell`);
  assert.ok(gap < perRun / 2, `event loop stalled ${gap.toFixed(0)} ms during runs of ${perRun.toFixed(0)} ms each`);
  const row = Array.from({ length: n }, (_, j) => x[j]!);
  let v = row;
  for (let k = 0; k < 3; k++) v = Array.from({ length: n }, (_, j) => v.reduce((acc, a, i) => acc + a * x[i * n + j]!, 0));
  assert.ok(Math.abs(out[0]! - v[0]!) <= 1e-3 * Math.max(1, Math.abs(v[0]!)), `${out[0]} vs ${v[0]}`);
}
