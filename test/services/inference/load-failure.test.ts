import assert from 'node:assert/strict';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isServiceError } from '../../../src/services/errors.ts';
import { loadModel } from '../../../src/services/inference/load.ts';
import { TINY_LLAMA } from './fixtures.ts';

test('a model whose graph is corrupt fails to load with a typed reason, not a bare error', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-corrupt-'));
  try {
    await cp(TINY_LLAMA, dir, { recursive: true });
    await writeFile(join(dir, 'onnx/model.onnx'), new TextEncoder().encode('this is not a protobuf graph'));
    await assert.rejects(
      loadModel(dir, 'text-generation', { dtype: 'fp32' }),
      (e) => isServiceError(e) && e.status === 500 && e.reason === 'model_load_failed' && /could not load/.test(e.message),
    );
    await assert.rejects(
      loadModel(dir, 'text-generation', { dtype: 'q4f16' }),
      (e) => isServiceError(e) && e.reason === 'model_load_failed' && /no onnx\/model file for dtype q4f16/.test(e.message),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
