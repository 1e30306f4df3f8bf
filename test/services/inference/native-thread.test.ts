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
type Lending = {
  runLending(
    feeds: Record<string, unknown>,
    fetches: Record<string, unknown>,
  ): Promise<{ outputs: Record<string, { data: Float32Array }>; buffers: Map<ArrayBuffer, ArrayBuffer> }>;
};

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

test('a lending run writes the output into the lent buffer, and every lent buffer comes back whole', async () => {
  const ort = await native();
  const session = await ort.InferenceSession.create(matmulChain(), { executionProviders: ['cpu'] });
  const n = 3;
  const x = Float32Array.of(1, 2, 0, 0, 1, 0, 0, 0, 2); // X⁴ by hand: [[1, 8, 0], [0, 1, 0], [0, 0, 16]]
  const xArena = new Float32Array(16);
  xArena.set(x, 4); // a view inside a larger buffer, as a decoder's arena holds its cache
  const yArena = new Float32Array(12).fill(-1);
  const feeds = { X: new ort.Tensor('float32', xArena.subarray(4, 13), [n, n]) };
  const fetches = { Y: new ort.Tensor('float32', yArena.subarray(0, 9), [n, n]) };
  const { outputs, buffers } = await (session as unknown as Lending).runLending(feeds, fetches);
  assert.equal(xArena.byteLength, 0, 'the lent input moved to the thread');
  assert.equal(yArena.byteLength, 0, 'the lent output moved to the thread');
  const xBack = new Float32Array(buffers.get(xArena.buffer as ArrayBuffer)!);
  const yBack = new Float32Array(buffers.get(yArena.buffer as ArrayBuffer)!);
  assert.deepEqual([...xBack.subarray(4, 13)], [...x], 'the input came back unchanged');
  assert.deepEqual([...yBack], [1, 8, 0, 0, 1, 0, 0, 0, 16, -1, -1, -1], 'written in place, the rest untouched');
  assert.equal(outputs.Y!.data.buffer, yBack.buffer, 'the output is a view of the buffer that came back');
  await session.release();
});

test('a lending copy (a decoder repacking its cache) is done in the thread, and every buffer comes back', async () => {
  const ort = await native();
  const session = await ort.InferenceSession.create(matmulChain(), { executionProviders: ['cpu'] });
  type Copying = { copyLending(m: { from: Float32Array; to: Float32Array; into: number }[]): Promise<Map<ArrayBuffer, ArrayBuffer>> };
  const copying = session as unknown as Copying;
  const a = Float32Array.from({ length: 10 }, (_, i) => i);
  const b = new Float32Array(8).fill(-1);
  const bView = b.subarray(2); // a destination inside a larger buffer: `into` counts from the view
  const moved = await copying.copyLending([
    { from: a.subarray(1, 4), to: bView, into: 0 },
    { from: a.subarray(7, 9), to: bView, into: 4 },
  ]);
  assert.equal(a.byteLength, 0, 'the source moved to the thread');
  assert.deepEqual([...new Float32Array(moved.get(a.buffer as ArrayBuffer)!)], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.deepEqual([...new Float32Array(moved.get(b.buffer as ArrayBuffer)!)], [-1, -1, 1, 2, 3, -1, 7, 8]);

  // a copy of hundreds of MB (a long context's cache) leaves the loop free while it runs
  const src = new Float32Array(64 * 1024 * 1024).fill(1);
  const dst = new Float32Array(src.length);
  const t1 = performance.now();
  const { value: back, gap } = await longestLoopGap(() => copying.copyLending([{ from: src, to: dst, into: 0 }]));
  const took = performance.now() - t1;
  const out = new Float32Array(back.get(dst.buffer as ArrayBuffer)!);
  assert.equal(out[out.length - 1], 1);
  assert.ok(took >= 20, `the copy took ${took.toFixed(0)} ms: too short to tell`);
  assert.ok(gap < took / 2, `event loop stalled ${gap.toFixed(0)} ms during a ${took.toFixed(0)} ms copy`);
  await session.release();
});
