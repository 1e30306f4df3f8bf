/**
 * A model file's graph read without its weights (src/services/models/onnx-file.ts). The judge is the real
 * `onnx` package (Debian python3-onnx): it loads the original and the graph written beside it, resolving the
 * external data itself, and compares every initializer's values, every node and the graph's inputs and
 * outputs. ONNX Runtime must give the same outputs on both.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import * as ort from 'onnxruntime-node';
import { externalBytes, graphOfBytes, graphOfFile } from '../../../src/services/models/onnx-file.ts';
import { decodeFields, externalTensor, first, indexGraph, ONNX } from '../../../src/services/models/onnx-wire.ts';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { TINY_LLAMA } from '../inference/fixtures.ts';
import { promptLogits } from '../inference/prompt-logits.ts';
import { unsignedJudge } from '../../support/unsigned-judge.ts';

const COMPARE = `
import json, sys, onnx
from onnx import numpy_helper
a, b = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
raw = onnx.load(sys.argv[2], load_external_data=False).graph.initializer
big = sum(len(t.raw_data) >= 1024 for t in onnx.load(sys.argv[1], load_external_data=False).graph.initializer)
ia = {t.name: numpy_helper.to_array(t) for t in a.graph.initializer}
ib = {t.name: numpy_helper.to_array(t) for t in b.graph.initializer}
same = set(ia) == set(ib) and all(ia[n].dtype == ib[n].dtype and ia[n].shape == ib[n].shape and (ia[n] == ib[n]).all() for n in ia)
strip = lambda g: [n.SerializeToString() for n in g.node]
print(json.dumps({
  'initializers': len(ia), 'big': big, 'external': sum(t.data_location == onnx.TensorProto.EXTERNAL for t in raw),
  'inline_big': sum(len(t.raw_data) >= 1024 for t in raw),
  'values': bool(same), 'nodes': strip(a.graph) == strip(b.graph),
  'io': [i.SerializeToString() for i in a.graph.input] == [i.SerializeToString() for i in b.graph.input]
    and [o.SerializeToString() for o in a.graph.output] == [o.SerializeToString() for o in b.graph.output],
  'opsets': [(o.domain, o.version) for o in a.opset_import] == [(o.domain, o.version) for o in b.opset_import],
}))
`;

let dir: string;
before(() => (dir = mkdtempSync(join(tmpdir(), 'onnx-file-'))));
after(() => rmSync(dir, { recursive: true, force: true }));

for (const file of ['model.onnx', 'model_quantized.onnx', 'model_q4.onnx']) {
  test(`${file}: the graph points at its weights in the file, and onnx reads the same model from it`, async () => {
    const original = join(dir, file);
    copyFileSync(join(TINY_LLAMA, 'onnx', file), original);
    const { bytes: graph, pointed } = graphOfFile(original)!;
    const beside = join(dir, `graph-of-${file}`);
    writeFileSync(beside, graph);
    const judged = JSON.parse(execFileSync('/usr/bin/python3', ['-c', COMPARE, original, beside], { encoding: 'utf8' }));
    // every raw payload of 1 KiB or more stays in the file; the graph keeps only the small ones
    assert.ok(judged.big > 0 && judged.external === judged.big && judged.inline_big === 0, JSON.stringify(judged));
    assert.equal(pointed, judged.big);
    // in memory, the weights are pointed at the same offsets of the same bytes (the WASM path hands them over so)
    assert.deepEqual(graphOfBytes(new Uint8Array(readFileSync(original)), file)!.bytes, graph);
    assert.ok(graph.length < statSync(original).size - judged.big * 1024, `${graph.length} bytes of ${statSync(original).size}`);
    assert.deepEqual({ ...judged, initializers: undefined, big: undefined, external: undefined, inline_big: undefined }, {
      initializers: undefined,
      big: undefined,
      external: undefined,
      inline_big: undefined,
      values: true,
      nodes: true,
      io: true,
      opsets: true,
    });

    // ONNX Runtime reads the weights from the original file: the same logits
    const opts = { intraOpNumThreads: 1 };
    const [a, b] = [await ort.InferenceSession.create(original, opts), await ort.InferenceSession.create(beside, opts)];
    const feeds = (s: ort.InferenceSession) => {
      const f: Record<string, ort.Tensor> = {};
      for (const n of s.inputNames) {
        if (n === 'input_ids') f[n] = new ort.Tensor('int64', BigInt64Array.of(5n, 9n, 2n), [1, 3]);
        else if (n === 'attention_mask') f[n] = new ort.Tensor('int64', BigInt64Array.of(1n, 1n, 1n), [1, 3]);
        else if (n === 'position_ids') f[n] = new ort.Tensor('int64', BigInt64Array.of(0n, 1n, 2n), [1, 3]);
        else if (n === 'num_logits_to_keep') f[n] = new ort.Tensor('int64', BigInt64Array.of(3n), []);
        else {
          const dims = (s.inputMetadata.find((m) => m.name === n) as { shape: readonly (number | string)[] }).shape;
          f[n] = new ort.Tensor('float32', new Float32Array(0), dims.map((d, i) => (i === 0 ? 1 : typeof d === 'number' ? d : 0)));
        }
      }
      return f;
    };
    const [ra, rb] = [await a.run(feeds(a)), await b.run(feeds(b))];
    assert.deepEqual(Array.from(rb.logits!.data as Float32Array), Array.from(ra.logits!.data as Float32Array));
    await Promise.all([a.release(), b.release()]);
  });
}

test("an initializer's external bytes are read back from the file it names", () => {
  const original = join(dir, 'bytes.onnx');
  copyFileSync(join(TINY_LLAMA, 'onnx', 'model.onnx'), original);
  const whole = new Uint8Array(readFileSync(original));
  const { inits } = indexGraph(decodeFields(first(decodeFields(graphOfFile(original)!.bytes), ONNX.model.graph)!.bytes!));
  const inline = indexGraph(decodeFields(first(decodeFields(whole), ONNX.model.graph)!.bytes!)).inits;
  let compared = 0;
  for (const [name, t] of inits) {
    const got = externalBytes(original, t);
    if (!got) continue;
    assert.deepEqual(got, first(inline.get(name)!.fields, ONNX.tensor.rawData)!.bytes, name);
    compared++;
  }
  assert.ok(compared > 0);
  // a location outside the model's folder is not read
  const outside = `${basename(dir)}-outside.bin`;
  writeFileSync(join(dir, '..', outside), new Uint8Array(16));
  try {
    for (const location of [`../${outside}`, join(dir, '..', outside)]) {
      const fields = decodeFields(externalTensor([], location, 0, 16).finish());
      assert.equal(externalBytes(original, { index: 0, fields, name: 'w', dims: [16], dataType: ONNX.dtype.UINT8 }), undefined, location);
    }
  } finally {
    rmSync(join(dir, '..', outside));
  }
});

test('a file cut short is refused with a clear error, not read past its end', () => {
  const cut = join(dir, 'cut.onnx');
  const whole = readFileSync(join(TINY_LLAMA, 'onnx', 'model.onnx'));
  writeFileSync(cut, whole.subarray(0, Math.floor(whole.length * 0.6)));
  assert.throws(() => graphOfFile(cut), /truncated|ended early/);
  const text = join(dir, 'text.onnx');
  writeFileSync(text, 'not a model at all\n');
  assert.throws(() => graphOfFile(text));
});

// last in this file: it binds the native backend, after which sessions are made in the inference thread
test('the native backend loads an inline file as its graph pointing into the file: the same logits, bit for bit', async () => {
  const original = join(dir, 'backend.onnx');
  copyFileSync(join(TINY_LLAMA, 'onnx', 'model_quantized.onnx'), original);
  // the reference with uint8 weights, as ONNX Runtime computes them exactly on every x64 CPU (../../support/unsigned-judge.ts):
  // on one without VNNI, svc's session makes them so too (src/services/inference/int8-weights.ts)
  const plain = await ort.InferenceSession.create(unsignedJudge(readFileSync(original)), { intraOpNumThreads: 1 });
  const expected = await promptLogits(plain as never, ort.Tensor as never);
  await plain.release();
  assert.equal((await initBackend('cpu')).ort, 'onnxruntime-node');
  const s = await ort.InferenceSession.create(original, { intraOpNumThreads: 1 });
  assert.equal(s.constructor.name, 'ThreadSession');
  assert.equal((s as unknown as { edits: { weightsInFile: number } }).edits.weightsInFile, graphOfFile(original)!.pointed);
  assert.ok(graphOfFile(original)!.pointed > 0);
  assert.deepEqual(await promptLogits(s as never, ort.Tensor as never), expected);
  await s.release();
});
