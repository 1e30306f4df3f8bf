/**
 * Loading a model hands its ONNX files (the graph and its external data) to ONNX Runtime by path and does not
 * also stream them into the server's thread: transformers.js' local file reader starts reading every file it
 * looks up (src/services/inference/local-files.ts). The judge is node:fs itself: every createReadStream made
 * while models load (transformers.js' reader takes node:fs' at each call), and the loads must still work.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel } from '../../../src/services/inference/load.ts';
import { TINY_LLAMA } from './fixtures.ts';

/** The fixture's fp32 graph with every initializer in one external data file, by the onnx package. */
const EXTERNAL = `
import sys, onnx
m = onnx.load(sys.argv[1])
onnx.save(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, location='model.onnx_data', size_threshold=0)
`;

const opened: string[] = [];
const createReadStream = fs.createReadStream;
let dir: string;

before(() => {
  dir = fs.mkdtempSync(join(tmpdir(), 'svc-local-files-'));
  fs.cpSync(TINY_LLAMA, dir, { recursive: true });
  fs.rmSync(join(dir, 'onnx', 'model.onnx'));
  execFileSync('/usr/bin/python3', ['-c', EXTERNAL, join(TINY_LLAMA, 'onnx', 'model.onnx'), join(dir, 'onnx', 'model.onnx')]);
  assert.ok(fs.statSync(join(dir, 'onnx', 'model.onnx_data')).size > 100_000);
  fs.createReadStream = ((path: fs.PathLike, options?: never) => {
    opened.push(String(path));
    return createReadStream(path, options);
  }) as typeof fs.createReadStream;
});

after(() => {
  fs.createReadStream = createReadStream;
  fs.rmSync(dir, { recursive: true, force: true });
});

for (const dtype of ['q8', 'fp32'] as const) {
  test(`a ${dtype} model loads without its ONNX files streamed into the server's thread`, async () => {
    opened.length = 0;
    const m = await loadModel(dir, 'text-generation', { backend: 'cpu', dtype, threads: 1 });
    try {
      assert.equal(m.dtype, dtype);
      // the spy sees transformers.js' reader: it still streams the small files it parses
      assert.ok(opened.some((p) => p.endsWith('tokenizer.json')), `streams opened: ${opened.join(', ')}`);
      assert.deepEqual(opened.filter((p) => p.includes('.onnx')), []);
    } finally {
      await m.dispose();
    }
  });
}
