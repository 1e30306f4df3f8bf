/**
 * WebGPU exercised without a GPU, on Mesa's lavapipe (a Vulkan software rasterizer; Mesa 25 from
 * bookworm-backports, which onnxruntime-node's Dawn accepts and Mesa 22 did not):
 * - onnxruntime-node's own WebGPU provider (Dawn), on Node, Bun and Deno: greedy decoding gives torch's
 *   tokens, as the CPU path does (test/services/inference/logits.test.ts), with the KV cache kept on the GPU
 *   in the inference thread between steps (only stand-ins for it reach the server's thread);
 * - onnxruntime-web's WebGPU backend on Deno's navigator.gpu: the same tokens, the KV cache on the GPU, the
 *   decoder rewritten (attention on unrepeated KV heads, fused rotary embeddings:
 *   src/services/inference/decoder-graph.ts); a model whose weights lie in an external data file loads there too.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REF } from '../services/inference/reference.ts';
import { TINY_LLAMA } from '../services/inference/fixtures.ts';
import { externalDataCopy, type ExternalDataModel } from '../support/external-data-model.ts';
import { SCRIPT_RUNNERS } from '../support/runtime-process.ts';

interface Result {
  cacheOutputs: number;
  threadHeld: number;
  readBack?: string;
  gpu: { adapter: boolean; software: boolean; description: string };
  device: string;
  ort: string;
  fallbacks: unknown[];
  ids: number[];
  sessions: number;
  runs: number;
  cacheLocations: string[];
  graphs: number;
}

/**
 * The onnx package's reading of decoder graphs (independent of the rewrite's own wire-format code): RotaryEmbedding
 * nodes, attention MatMuls (both operands computed), and MatMuls reading KV heads repeated per query head (an
 * Expand at most four producers up: the export's Unsqueeze → Expand → Reshape → Transpose).
 */
const GRAPH_OPS = `
import json, sys, onnx
def read(p):
    g = onnx.load(p, load_external_data=False).graph
    inits = {t.name for t in g.initializer}
    prod = {o: n for n in g.node for o in n.output}
    def repeated(t):
        n = prod.get(t)
        for _ in range(4):
            if n is None: return False
            if n.op_type == 'Expand': return True
            n = prod.get(n.input[0]) if n.input else None
        return False
    mm = [n for n in g.node if n.op_type == 'MatMul' and n.domain == '']
    return {
        'rotary': sum(n.op_type == 'RotaryEmbedding' and n.domain == 'com.microsoft' for n in g.node),
        'attentionMatMuls': sum(not any(i in inits or prod.get(i, onnx.NodeProto()).op_type == 'Constant' for i in n.input) for n in mm),
        'repeatedKv': sum(any(repeated(i) for i in n.input) for n in mm),
    }
print(json.dumps([read(p) for p in sys.argv[1:]]))
`;
type GraphOps = { rotary: number; attentionMatMuls: number; repeatedKv: number };
const graphOps = (...files: string[]) =>
  JSON.parse(execFileSync('/usr/bin/python3', ['-c', GRAPH_OPS, ...files], { encoding: 'utf8' })) as GraphOps[];
const LAYERS = JSON.parse(readFileSync(join(TINY_LLAMA, 'config.json'), 'utf8')).num_hidden_layers as number;

const RUNTIMES = SCRIPT_RUNNERS;

/** test/support/webgpu-greedy.ts (ORT [MODEL_DIR [GRAPHS_DIR]]) under a runtime: its JSON line, with the device and ONNX Runtime checked. */
function greedyOn(runtime: keyof typeof RUNTIMES, ort: 'onnxruntime-web' | 'onnxruntime-node', ...args: string[]): Result {
  const [cmd, ...pre] = RUNTIMES[runtime];
  const p = spawnSync(cmd, [...pre, 'test/support/webgpu-greedy.ts', ort, ...args], {
    encoding: 'utf8',
    timeout: 240_000,
    env: { ...process.env, NO_COLOR: '1', XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp' },
  });
  const line = p.stdout.split('\n').find((l) => l.startsWith('{'));
  assert.ok(line, `no result from ${runtime} (exit ${p.status}): ${p.stderr.slice(-2000)}`);
  assert.equal(p.status, 0, `${runtime} exited ${p.status}: ${p.stderr.slice(-2000)}`);
  const r = JSON.parse(line) as Result;
  if (runtime === 'deno') assert.ok(r.gpu.adapter, `no WebGPU adapter under Deno: ${r.gpu.description} (needs mesa-vulkan-drivers)`);
  assert.equal(r.device, 'webgpu', `ran on ${r.device}; fallbacks ${JSON.stringify(r.fallbacks)}`);
  assert.equal(r.ort, ort);
  return r;
}

const greedyOnDeno = (...args: string[]) => greedyOn('deno', 'onnxruntime-web', ...args);

describe("onnxruntime-node's WebGPU provider (Dawn)", () => {
  for (const runtime of ['node', 'bun', 'deno'] as const) {
    test(`${runtime} + lavapipe: greedy decoding gives torch's tokens, the KV cache held on the GPU in the inference thread`, () => {
      const r = greedyOn(runtime, 'onnxruntime-node');
      assert.deepEqual(r.ids, REF.generate.greedy_ids);
      assert.deepEqual(r.cacheLocations, ['gpu-buffer']);
      // every present.* output that reached this thread stood for a tensor the inference thread holds
      assert.ok(r.cacheOutputs >= 2 * LAYERS * REF.generate.greedy_ids.length, `${r.cacheOutputs} cache outputs`);
      assert.equal(r.threadHeld, r.cacheOutputs);
      // reading one back is refused with a reason, and the process lives on (onnxruntime-node itself would abort it)
      assert.match(r.readBack ?? '', /^refused: reading a GPU tensor back/);
    });
  }
});

describe('tiny-llama', () => {
  let graphs: string;
  before(() => {
    graphs = mkdtempSync(join(tmpdir(), 'webgpu-graphs-'));
  });
  after(() => rmSync(graphs, { recursive: true, force: true }));

  test("Deno + lavapipe, onnxruntime-web: greedy decoding on WebGPU gives torch's tokens, the KV cache on the GPU, the decoder rewritten", () => {
    const r = greedyOnDeno(TINY_LLAMA, graphs);
    assert.deepEqual(r.ids, REF.generate.greedy_ids);
    assert.ok(r.sessions > 0 && r.runs >= REF.generate.greedy_ids.length, `${r.sessions} sessions, ${r.runs} runs`);
    // every present.* output of every step came back as a GPU buffer, never read back to the CPU
    assert.deepEqual(r.cacheLocations, ['gpu-buffer']);
    // the graph onnxruntime-web ran: each layer's attention reads its KV heads unrepeated, rotary embeddings fused
    const files = readdirSync(graphs).map((f) => join(graphs, f));
    assert.equal(files.length, 1, `graphs handed to onnxruntime-web: ${files.length}`);
    const [exported, ran] = graphOps(join(TINY_LLAMA, 'onnx', 'model.onnx'), files[0]!);
    assert.deepEqual(exported, { rotary: 0, attentionMatMuls: 2 * LAYERS, repeatedKv: 2 * LAYERS }); // what the judge sees unfused
    assert.deepEqual(ran, { rotary: 2 * LAYERS, attentionMatMuls: 2 * LAYERS, repeatedKv: 0 });
  });
});

describe('a model with its weights in an external data file', () => {
  let copy: ExternalDataModel;
  before(() => {
    copy = externalDataCopy(TINY_LLAMA);
  });
  after(() => copy?.remove());

  test("Deno + lavapipe, onnxruntime-web: it loads on WebGPU and greedy decoding gives torch's tokens", () => {
    assert.ok(copy.initializers > 0 && copy.external === copy.initializers, JSON.stringify(copy));
    const r = greedyOnDeno(copy.dir);
    assert.deepEqual(r.ids, REF.generate.greedy_ids);
    assert.deepEqual(r.cacheLocations, ['gpu-buffer']);
  });
});
