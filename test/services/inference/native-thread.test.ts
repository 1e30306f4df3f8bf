/**
 * onnxruntime-node's CPU sessions run in the inference thread: its `run` computes synchronously on the
 * calling thread, so on the server's thread a long prompt's prefill would stop every route for seconds.
 * This file binds the native backend (node --test gives each file a process).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { longestLoopGap, loopStaysFree, matmulChain } from './matmul-chain.ts';

type Ort = typeof import('onnxruntime-node');
type Arena = { id: number; length: number };
type View = { held: number; offset: number; length: number; dims: number[] };
type Held = {
  hold(lengths: number[]): Promise<Arena[]>;
  drop(arenas: Arena[]): void;
  runHeld(feeds: Record<string, unknown>, fetches: Record<string, View>): Promise<Record<string, { data: Float32Array }>>;
  copyHeld(moves: { from: number; fromOffset: number; length: number; to: number; toOffset: number }[]): Promise<void>;
};

/** A · B for square row-major matrices (the reference the session's products are checked against). */
const mul = (a: number[], b: number[], n: number) =>
  Array.from({ length: n * n }, (_, k) => {
    let sum = 0;
    for (let j = 0; j < n; j++) sum += a[Math.floor(k / n) * n + j]! * b[j * n + (k % n)]!;
    return sum;
  });
const pow4 = (x: number[], n: number) => mul(mul(mul(x, x, n), x, n), x, n);

const native = async (): Promise<Ort> => {
  const rt = await initBackend('cpu');
  assert.equal(rt.ort, 'onnxruntime-node');
  return await import('onnxruntime-node');
};

test('a long native session run leaves the event loop free (it runs in the inference thread)', async () => {
  const ort = await native();
  const session = await ort.InferenceSession.create(matmulChain(), { executionProviders: ['cpu'], intraOpNumThreads: 1 });
  assert.equal(session.constructor.name, 'ThreadSession');
  // native kernels are fast: a larger matrix than WASM needs for runs long enough to tell
  await loopStaysFree((x, n) => session.run({ X: new ort.Tensor('float32', x, [n, n]) }).then((r) => r.Y!.data as Float32Array), 1280);
  await session.release();
});

test('a held run reads its input from and writes its output into buffers that stay in the thread', async () => {
  const ort = await native();
  const session = await ort.InferenceSession.create(matmulChain(), { executionProviders: ['cpu'] });
  const held = session as unknown as Held;
  const n = 3;
  const x = [1, 2, 0, 0, 1, 0, 0, 0, 2];
  const [a, b] = await held.hold([16, 12]);
  const at = (arena: Arena, offset: number): View => ({ held: arena!.id, offset, length: n * n, dims: [n, n] });
  // X⁴ written into a at element 4 (inside the buffer, as a decoder's arena holds its cache): not sent back
  const first = await held.runHeld({ X: new ort.Tensor('float32', Float32Array.from(x), [n, n]) }, { Y: at(a!, 4) });
  assert.deepEqual(Object.keys(first), [], 'a held output is not sent back');
  // read back through a second run: (X⁴)⁴
  const second = await held.runHeld({ X: at(a!, 4) }, {});
  assert.deepEqual([...second.Y!.data], pow4(pow4(x, n), n));

  // copies between held buffers: the rows of X⁴ in reverse order into b at element 2
  const rows = [2, 1, 0].map((r, i) => ({ from: a!.id, fromOffset: 4 + r * n, length: n, to: b!.id, toOffset: 2 + i * n }));
  await held.copyHeld(rows);
  const x4 = pow4(x, n);
  const reversed = [...x4.slice(6, 9), ...x4.slice(3, 6), ...x4.slice(0, 3)];
  const third = await held.runHeld({ X: at(b!, 2) }, {});
  assert.deepEqual([...third.Y!.data], pow4(reversed, n));

  // a dropped buffer is gone; so are those of a released session
  held.drop([b!]);
  await assert.rejects(held.runHeld({ X: at(b!, 2) }, {}), /held buffer \d+ is gone/);
  const other = await ort.InferenceSession.create(matmulChain(), { executionProviders: ['cpu'] });
  await session.release();
  await assert.rejects((other as unknown as Held).runHeld({ X: at(a!, 4) }, {}), /held buffer \d+ is gone/);
  await other.release();
});

test('a copy between held buffers (a decoder repacking its cache) leaves the loop free', async () => {
  const ort = await native();
  const session = await ort.InferenceSession.create(matmulChain(), { executionProviders: ['cpu'] });
  const held = session as unknown as Held;
  // hundreds of MB, as a long context's cache
  const length = 64 * 1024 * 1024;
  const [src, dst] = await held.hold([length, length]);
  const t1 = performance.now();
  const { gap } = await longestLoopGap(() => held.copyHeld([{ from: src!.id, fromOffset: 0, length, to: dst!.id, toOffset: 0 }]));
  const took = performance.now() - t1;
  assert.ok(took >= 20, `the copy took ${took.toFixed(0)} ms: too short to tell`);
  assert.ok(gap < took / 2, `event loop stalled ${gap.toFixed(0)} ms during a ${took.toFixed(0)} ms copy`);
  await session.release();
});
