/**
 * svc's WASM kernels as a module (src/runtime/wasm-kernels.ts): the committed native/kernels/svc_kernels.wasm is
 * what its sources compile to, it needs nothing from its host, and it can be turned off. What it computes is
 * judged against ONNX Runtime with the addon's tests (kernels.test.ts, attention.test.ts) and in the split session
 * (test/services/inference/weight-split.test.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { wasmKernels, wasmKernelsUnavailable } from '../../src/runtime/wasm-kernels.ts';
import { buildWasmKernels } from '../../scripts/build-wasm-kernels.mjs';

const FILE = new URL('../../native/kernels/svc_kernels.wasm', import.meta.url);

test('the committed module is what native/kernels/wasm.c and attention.c compile to', async () => {
  const built = await buildWasmKernels();
  assert.ok(Buffer.compare(Buffer.from(built), readFileSync(FILE)) === 0, 'npm run build:wasm-kernels, then commit svc_kernels.wasm');
});

test('it imports nothing and loads, with 128-bit SIMD', () => {
  const module = new WebAssembly.Module(readFileSync(FILE));
  assert.deepEqual(WebAssembly.Module.imports(module), []);
  assert.equal(wasmKernelsUnavailable(), undefined);
  assert.equal(wasmKernels()?.path, 'wasm-simd128');
});

test('SVC_WASM_KERNELS=0 turns them off, with that reason', () => {
  const code = "import('./src/runtime/wasm-kernels.ts').then((k) => console.log(JSON.stringify([k.wasmKernels() === undefined, k.wasmKernelsUnavailable()])))";
  const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', code], {
    env: { ...process.env, SVC_WASM_KERNELS: '0' },
    encoding: 'utf8',
  });
  assert.deepEqual(JSON.parse(out), [true, 'disabled by SVC_WASM_KERNELS=0']);
});
