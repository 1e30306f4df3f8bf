import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../../src/services/inference/load.ts';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { greedyIds, PROMPT } from './greedy.ts';
import { TINY_LLAMA } from './fixtures.ts';

const run = promisify(execFile);

// This file binds the native runtime with backend "webgpu": node --test gives each file its own process.
test('webgpu requested: runs on an adapter when there is one, else falls back to the CPU and says so', async () => {
  const m = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'webgpu' });
  assert.equal(m.ort, 'onnxruntime-node');
  if (m.device === 'webgpu') {
    // An adapter exists: nothing was tried before it, and it computes what the CPU computes.
    assert.deepEqual(m.fallbacks, []);
    const cpu = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu' });
    assert.deepEqual(await greedyIds(m, PROMPT, 8), await greedyIds(cpu, PROMPT, 8));
    await cpu.dispose();
  } else {
    assert.equal(m.device, 'cpu');
    assert.equal(m.fallbacks[0].device, 'webgpu');
    assert.match(m.fallbacks[0].error, /adapter|webgpu/i);
    assert.ok(m.notes.some((n) => /webgpu failed .*fell back/.test(n)), m.notes.join('\n'));
  }
  await m.dispose();
});

test('the runtime is bound once per process: asking for wasm after native throws', async () => {
  await assert.rejects(initBackend('wasm'), /already bound to onnxruntime-node/);
});

test('the WASM backend produces the same greedy tokens as the native one', async () => {
  const native = await loadModel(TINY_LLAMA, 'text-generation', { backend: 'cpu' });
  assert.equal(native.device, 'cpu');
  const want = await greedyIds(native);
  const script = fileURLToPath(new URL('./greedy.ts', import.meta.url));
  const { stdout } = await run(process.execPath, ['--import', 'tsx', script, 'wasm'], { timeout: 60_000 });
  const wasm = JSON.parse(stdout.trim().split('\n').at(-1)!);
  assert.equal(wasm.ort, 'onnxruntime-web');
  assert.equal(wasm.device, 'wasm');
  assert.equal(want.length, 32);
  assert.deepEqual(wasm.ids, want);
});
