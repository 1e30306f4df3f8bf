/**
 * 4-bit files as the hub ships them (transformers.js' quantizer leaves MatMulNBits' `accuracy_level` unset,
 * which ONNX Runtime runs in fp32) get the int8 activation kernels on the native CPU. The judge is ONNX
 * Runtime on a graph the real `onnx` Python package gave level 4: a session created from the unset file must
 * give exactly its logits, and not those ONNX Runtime gives the unset file as it is. This file binds the
 * native backend (node --test gives each file a process).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { initBackend } from '../../../src/services/inference/backend.ts';
import { loadModel } from '../../../src/services/inference/load.ts';
import { importOnnxruntimeNode } from '../../../src/services/inference/onnxruntime-node.ts';
import { mergedInput, writeMergedNbitsModel } from '../../support/merged-nbits-model.ts';
import { TINY_LLAMA } from './fixtures.ts';
import { promptLogits } from './prompt-logits.ts';
import { greedyOnReferencePrompt } from './reference.ts';

type Ort = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

/** onnx's own edit of the fixture's q4 graph: the attribute removed (as the hub's files have it) or set. */
const LEVEL = 'scripts/models/nbits-accuracy-level.py';
const Q4 = join(TINY_LLAMA, 'onnx', 'model_q4.onnx');
const edit = (out: string, level: string, ...flags: string[]) =>
  Number(execFileSync('/usr/bin/python3', [LEVEL, Q4, join(dir, out), level, ...flags], { encoding: 'utf8' }));
const editMerged = (out: string, level: string) =>
  Number(execFileSync('/usr/bin/python3', [LEVEL, join(dir, 'merged.onnx'), join(dir, out), level], { encoding: 'utf8' }));

let dir: string;
let nodes: number;
/** ONNX Runtime in this process, before the backend moves sessions to the inference thread. */
let asIs: Float32Array;
/** The merged graph's outputs as ONNX Runtime gives them for the file as it is, by branch. */
let mergedAsIs: Float32Array[];
const X = mergedInput();
const merged = async (s: Session, branch: boolean) =>
  (await s.run({ X: new ort.Tensor('float32', X, [2, 64]), C: new ort.Tensor('bool', Uint8Array.of(branch ? 1 : 0), []) } as never)).Y!
    .data as Float32Array;
let ort: Ort;

const logits = (s: Session) => promptLogits(s as never, ort.Tensor as never);
const int8Activations = (s: Session) => (s as unknown as { edits: { int8Activations: number } }).edits.int8Activations;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nbits-accuracy-'));
  mkdirSync(join(dir, 'external'));
  mkdirSync(join(dir, 'hub', 'onnx'), { recursive: true });
  for (const f of readdirSync(TINY_LLAMA)) {
    if (statSync(join(TINY_LLAMA, f)).isFile()) copyFileSync(join(TINY_LLAMA, f), join(dir, 'hub', f));
  }
  nodes = edit('unset.onnx', 'unset');
  for (const [out, level] of [['level4.onnx', '4'], ['level1.onnx', '1'], ['hub/onnx/model_q4.onnx', 'unset']]) edit(out!, level!);
  edit('external/model.onnx', 'unset', '--external');
  writeMergedNbitsModel(join(dir, 'merged.onnx'));
  assert.equal(editMerged('merged-unset.onnx', 'unset'), 2);
  editMerged('merged-level4.onnx', '4');
  assert.ok(nodes > 0);
  ort = (await importOnnxruntimeNode()) as unknown as Ort;
  const raw = await ort.InferenceSession.create(join(dir, 'unset.onnx'), { intraOpNumThreads: 1 });
  asIs = await logits(raw);
  await raw.release();
  const rawMerged = await ort.InferenceSession.create(join(dir, 'merged-unset.onnx'), { intraOpNumThreads: 1 });
  mergedAsIs = [await merged(rawMerged, true), await merged(rawMerged, false)];
  await rawMerged.release();
  assert.equal((await initBackend('cpu')).ort, 'onnxruntime-node');
});
after(() => rmSync(dir, { recursive: true, force: true }));

test("an unset accuracy_level runs on the int8 kernels: the logits of onnx's level-4 graph, bit for bit", async () => {
  const level4 = await ort.InferenceSession.create(join(dir, 'level4.onnx'), { intraOpNumThreads: 1 });
  const unset = await ort.InferenceSession.create(join(dir, 'unset.onnx'), { intraOpNumThreads: 1 });
  assert.equal(unset.constructor.name, 'ThreadSession');
  assert.equal(int8Activations(level4), 0, 'a graph that sets the level is used as it is');
  assert.equal(int8Activations(unset), nodes);
  const [want, got] = [await logits(level4), await logits(unset)];
  assert.deepEqual(got, want);
  // and the kernel did change: ONNX Runtime's fp32 path gives other logits for the same file
  assert.notDeepEqual(got, asIs);
  await level4.release();
  await unset.release();
});

test("a merged decoder's MatMulNBits, inside the branches of an If, get the level too", async () => {
  const level4 = await ort.InferenceSession.create(join(dir, 'merged-level4.onnx'), { intraOpNumThreads: 1 });
  const unset = await ort.InferenceSession.create(join(dir, 'merged-unset.onnx'), { intraOpNumThreads: 1 });
  assert.equal(int8Activations(level4), 0);
  assert.equal(int8Activations(unset), 2);
  for (const [i, branch] of [true, false].entries()) {
    const got = await merged(unset, branch);
    assert.deepEqual(got, await merged(level4, branch));
    assert.notDeepEqual(got, mergedAsIs[i]);
  }
  await level4.release();
  await unset.release();
});

test('a level the file sets is kept (1: fp32)', async () => {
  const s = await ort.InferenceSession.create(join(dir, 'level1.onnx'), { intraOpNumThreads: 1 });
  assert.equal(int8Activations(s), 0);
  await s.release();
});

test('a graph whose weights lie in an external data file gets the level too, its data read from beside it', async () => {
  const level4 = await ort.InferenceSession.create(join(dir, 'level4.onnx'), { intraOpNumThreads: 1 });
  const s = await ort.InferenceSession.create(join(dir, 'external', 'model.onnx'), { intraOpNumThreads: 1 });
  assert.equal(int8Activations(s), nodes);
  assert.deepEqual(await logits(s), await logits(level4));
  await s.release();
  await level4.release();
});

test('a hub-style q4 decoder loads with the level set and its decoder rewrites, and generates', async () => {
  const m = await loadModel(join(dir, 'hub'), 'text-generation', { backend: 'cpu', dtype: 'q4', threads: 1 });
  try {
    const s =
      (m.model as unknown as { sessions: { model: { edits: { int8Activations: number; groupedAttention: number } } } }).sessions.model
        .edits;
    assert.equal(s.int8Activations, nodes);
    assert.ok(s.groupedAttention > 0, 'the decoder rewrites applied as well');
    const got = await greedyOnReferencePrompt(m.model as never, m.tf.Tensor, 8);
    assert.equal(got.length, 8);
  } finally {
    await m.dispose();
  }
});
