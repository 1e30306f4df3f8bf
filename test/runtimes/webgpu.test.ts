/**
 * WebGPU exercised without a GPU: Deno's navigator.gpu on Mesa's lavapipe (a Vulkan software rasterizer,
 * Debian mesa-vulkan-drivers) runs transformers.js on onnxruntime-web's WebGPU backend, and greedy
 * decoding must give torch's tokens, as the CPU path does (test/services/inference/logits.test.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { REF } from '../services/inference/reference.ts';

test("Deno + lavapipe: greedy decoding on WebGPU gives torch's tokens", () => {
  const p = spawnSync('node_modules/.bin/deno', ['run', '-A', 'test/support/webgpu-greedy.ts'], {
    encoding: 'utf8',
    timeout: 240_000,
    env: { ...process.env, NO_COLOR: '1', XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' },
  });
  const line = p.stdout.split('\n').find((l) => l.startsWith('{'));
  assert.ok(line, `no result from deno (exit ${p.status}): ${p.stderr.slice(-2000)}`);
  const r = JSON.parse(line) as {
    gpu: { adapter: boolean; software: boolean; description: string };
    device: string;
    ort: string;
    fallbacks: unknown[];
    ids: number[];
  };
  assert.ok(r.gpu.adapter, `no WebGPU adapter under Deno: ${r.gpu.description} (needs mesa-vulkan-drivers)`);
  assert.equal(r.device, 'webgpu', `ran on ${r.device}; fallbacks ${JSON.stringify(r.fallbacks)}`);
  assert.equal(r.ort, 'onnxruntime-web');
  assert.deepEqual(r.ids, REF.generate.greedy_ids);
});
