/**
 * threadMemoryBytes (src/runtime/worker.ts), which a worker reports after every operation so that its pool can
 * retire it: on Deno and Bun, run in a worker, it is that worker's heap (it grows with what the worker keeps,
 * and the main thread's does not), and it is cheap with a large heap (on Bun, `v8.getHeapStatistics()` walks
 * the heap: ~8 ms a call for 200,000 objects, which cost an inference thread ~2 ms a token).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

const WORKER = `
const { threadMemoryBytes } = await import(${JSON.stringify(new URL('../../src/runtime/worker.ts', import.meta.url).href)});
const before = await threadMemoryBytes();
globalThis.kept = Array.from({ length: 1_000_000 }, (_, i) => ({ i, s: 'x' + i }));
const after = await threadMemoryBytes();
const times = [];
for (let i = 0; i < 9; i++) {
  const t0 = performance.now();
  await threadMemoryBytes();
  times.push(performance.now() - t0);
}
postMessage({ before, after, ms: times.sort((a, b) => a - b)[4] });
`;

const MAIN = `
const { threadMemoryBytes } = await import(${JSON.stringify(new URL('../../src/runtime/worker.ts', import.meta.url).href)});
const url = URL.createObjectURL(new Blob([${JSON.stringify(WORKER)}], { type: 'text/javascript' }));
const mainBefore = await threadMemoryBytes();
const w = new Worker(url, { type: 'module' });
w.onmessage = async (e) => {
  console.log(JSON.stringify({ ...e.data, mainBefore, mainAfter: await threadMemoryBytes() }));
  w.terminate();
};
`;

for (const [runtime, args] of [['deno', ['eval', MAIN]], ['bun', ['-e', MAIN]]] as const) {
  test(`on ${runtime}, a worker's threadMemoryBytes is its own heap, and cheap with a million objects kept`, () => {
    const out = execFileSync(`node_modules/.bin/${runtime}`, args, { encoding: 'utf8' });
    const got = JSON.parse(out.trim().split('\n').at(-1)!);
    const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`;
    assert.ok(got.after - got.before > 20 * 2 ** 20, `the worker's heap grew ${mb(got.after - got.before)}`);
    assert.ok(got.mainAfter - got.mainBefore < 10 * 2 ** 20, `the main thread's grew ${mb(got.mainAfter - got.mainBefore)}`);
    assert.ok(got.ms < 2, `a call took ${got.ms.toFixed(3)} ms (median of 9)`);
  });
}
