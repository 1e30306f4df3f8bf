/**
 * `/api/create` with `adapters`: a PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors,
 * generated here for tiny-llama's q_proj/v_proj) merged into the ONNX weights; the merged initializers are
 * read back and compared with base + scale·(B·A)ᵀ, the model generates differently from its base, and bad
 * adapters are refused with 400.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import { readLocalCopy } from '../../../src/services/models/manifest.ts';
import { all, decodeFields, first, int64s, ONNX, str } from '../../../src/services/models/onnx-wire.ts';
import { FIXTURE_CATALOG, FIXTURE_MODELS_DIR, type HubStandIn, startFixtureHub } from '../../support/hub-stand-in.ts';
import { listening } from '../../support/server.ts';

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
let ollama: Ollama;

const BASE = 'tiny-llama:test';
const LAYERS = 2;
const HIDDEN = 32;
const KV = 16; // num_key_value_heads · head_dim: v_proj's out features
const R = 4;
const ALPHA = 8;
const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** Deterministic values exactly representable in F16 (multiples of 1/64 in [-1, 1]), so F32 and F16 adapters agree. */
function values(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s >>> 8) % 129 - 64) / 64;
  }
  return out;
}

function toHalf(f: number): number {
  // Exact for the values above (normal numbers with ≤ 10 mantissa bits, or zero).
  if (f === 0) return 0;
  const b = new DataView(new ArrayBuffer(4));
  b.setFloat32(0, f);
  const x = b.getUint32(0);
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  return sign | (exp << 10) | ((x >>> 13) & 0x3ff);
}

type Tensors = Record<string, { shape: number[]; data: Float32Array }>;

/** A safetensors file: 8-byte LE header length, JSON header, raw little-endian data. */
function safetensors(tensors: Tensors, dtype: 'F32' | 'F16' = 'F32'): Uint8Array {
  const size = dtype === 'F32' ? 4 : 2;
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let off = 0;
  for (const [k, t] of Object.entries(tensors)) {
    header[k] = { dtype, shape: t.shape, data_offsets: [off, off + t.data.length * size] };
    off += t.data.length * size;
  }
  let json = JSON.stringify(header);
  while ((json.length + 8) % 8) json += ' ';
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + off);
  const v = new DataView(out.buffer);
  v.setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let p = 8 + head.length;
  for (const t of Object.values(tensors)) {
    for (const x of t.data) {
      if (dtype === 'F32') v.setFloat32(p, x, true);
      else v.setUint16(p, toHalf(x), true);
      p += size;
    }
  }
  return out;
}

/** A q_proj + v_proj adapter for every layer (key layout of PEFT on LlamaForCausalLM). */
function llamaAdapter(seed = 1): Tensors {
  const t: Tensors = {};
  for (let l = 0; l < LAYERS; l++) {
    for (const [m, out] of [['q_proj', HIDDEN], ['v_proj', KV]] as const) {
      const p = `base_model.model.model.layers.${l}.self_attn.${m}`;
      t[`${p}.lora_A.weight`] = { shape: [R, HIDDEN], data: values(R * HIDDEN, seed + l * 10 + out) };
      t[`${p}.lora_B.weight`] = { shape: [out, R], data: values(out * R, seed + l * 10 + out + 5) };
    }
  }
  return t;
}

const config = (extra: Record<string, unknown> = {}) =>
  new TextEncoder().encode(JSON.stringify({
    peft_type: 'LORA',
    r: R,
    lora_alpha: ALPHA,
    target_modules: ['q_proj', 'v_proj'],
    fan_in_fan_out: false,
    bias: 'none',
    ...extra,
  }));

async function push(bytes: Uint8Array): Promise<string> {
  const res = await fetch(`${srv.url}/api/blobs/${sha(bytes)}`, { method: 'POST', body: bytes as Uint8Array<ArrayBuffer> });
  assert.equal(res.status, 201);
  return sha(bytes);
}

async function pushAdapter(weights: Uint8Array, cfg = config()): Promise<Record<string, string>> {
  return { 'adapter_model.safetensors': await push(weights), 'adapter_config.json': await push(cfg) };
}

/** The fp32 weight of each `/layers.N/<module>/MatMul` node, by `layers.N.<module>`. */
function matmulWeights(onnx: Uint8Array): Map<string, { dims: number[]; data: Float32Array }> {
  const g = decodeFields(first(decodeFields(onnx), ONNX.model.graph)!.bytes!);
  const inits = new Map<string, { dims: number[]; data: Float32Array }>();
  for (const f of all(g, ONNX.graph.initializer)) {
    const t = decodeFields(f.bytes!);
    if (Number(first(t, ONNX.tensor.dataType)?.int) !== ONNX.dtype.FLOAT) continue;
    const raw = new Uint8Array(first(t, ONNX.tensor.rawData)?.bytes ?? []);
    inits.set(str(first(t, ONNX.tensor.name)?.bytes), {
      dims: int64s(t, ONNX.tensor.dims),
      data: new Float32Array(raw.buffer, 0, raw.byteLength / 4),
    });
  }
  const out = new Map<string, { dims: number[]; data: Float32Array }>();
  for (const f of all(g, ONNX.graph.node)) {
    const n = decodeFields(f.bytes!);
    const m = /^\/(layers\.\d+)\/(\w+_proj)\/MatMul$/.exec(str(first(n, ONNX.node.name)?.bytes));
    const w = inits.get(str(all(n, ONNX.node.input)[1]?.bytes));
    if (m && w) out.set(`${m[1]}.${m[2]}`, w);
  }
  return out;
}

async function modelGraph(name: string): Promise<Uint8Array> {
  const s = await srv.models.pulls.resolve(name);
  const local = await readLocalCopy(srv.models.layout, s.spec.repo, s.spec.dtype);
  assert.ok(local, `${name} has a local copy`);
  return readFile(join(local.dir, 'onnx/model.onnx'));
}

/** Checks every adapted weight of `merged` against base + scale·(B·A)ᵀ; untouched weights equal the base's. */
function assertMerged(base: Uint8Array, merged: Uint8Array, adapter: Tensors, scale: number) {
  const b = matmulWeights(base);
  const m = matmulWeights(merged);
  assert.equal(m.size, b.size);
  let checked = 0;
  for (const [key, w] of b) {
    const got = m.get(key)!;
    assert.deepEqual(got.dims, w.dims);
    const [, layer, mod] = /^(layers\.\d+)\.(\w+)$/.exec(key)!;
    const A = adapter[`base_model.model.model.${layer}.self_attn.${mod}.lora_A.weight`];
    const B = adapter[`base_model.model.model.${layer}.self_attn.${mod}.lora_B.weight`];
    const [I, O] = w.dims;
    let maxDiff = 0;
    let changed = 0;
    for (let i = 0; i < I; i++) {
      for (let o = 0; o < O; o++) {
        let delta = 0;
        if (A && B) { for (let k = 0; k < R; k++) delta += B.data[o * R + k] * A.data[k * I + i]; }
        const expected = w.data[i * O + o] + scale * delta;
        maxDiff = Math.max(maxDiff, Math.abs(got.data[i * O + o] - expected));
        if (got.data[i * O + o] !== w.data[i * O + o]) changed++;
      }
    }
    assert.ok(maxDiff <= 1e-5, `${key}: max difference ${maxDiff}`);
    if (A) {
      checked++;
      assert.ok(changed > 0, `${key} was updated`);
    } else assert.equal(changed, 0, `${key} untouched`);
  }
  assert.equal(checked, LAYERS * 2, 'q_proj and v_proj of every layer checked');
}

const greedy = async (model: string) =>
  (await ollama.generate({ model, prompt: 'Once upon a time', stream: false, options: { temperature: 0, num_predict: 12 } })).response ??
    '';

const post = (body: unknown) =>
  fetch(`${srv.url}/api/create`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function errorOf(res: Response): Promise<string> {
  assert.equal(res.status, 400, `expected 400, got ${res.status}: ${await res.clone().text()}`);
  return (await res.json()).error;
}

before(async () => {
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'], maxUploadBytes: 2_000_000 });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  ollama = new Ollama({ host: srv.url });
  await ollama.pull({ model: BASE });
});

after(async () => {
  await srv?.stop();
  await hub?.close();
});

describe('create with a LoRA adapter', () => {
  const adapter = llamaAdapter();
  let baseGraph: Uint8Array;
  before(async () => {
    baseGraph = await readFile(join(FIXTURE_MODELS_DIR, 'tiny-llama/onnx/model.onnx'));
  });

  it('merges an F32 adapter into the ONNX weights: W + (alpha/r)·(B·A)ᵀ, progress per module', async () => {
    const adapters = await pushAdapter(safetensors(adapter));
    const stream = await ollama.create({ model: 'llama-lora', from: BASE, adapters, stream: true });
    const events: { status: string; total?: number; completed?: number }[] = [];
    for await (const ev of stream) events.push(ev);
    const applying = events.filter((e) => e.status === 'applying adapter');
    assert.deepEqual(applying.map((e) => e.completed), [1, 2, 3, 4], events.map((e) => e.status).join(', '));
    assert.ok(applying.every((e) => e.total === 4));
    assert.equal(events.at(-1)!.status, 'success');
    assertMerged(baseGraph, await modelGraph('llama-lora'), adapter, ALPHA / R);
    assert.deepEqual(await modelGraph(BASE), baseGraph, 'the base model is untouched');
  });

  it('the merged model generates, differently from its base', async () => {
    const base = await greedy(BASE);
    const merged = await greedy('llama-lora');
    assert.ok(merged.length > 0, 'generated text');
    assert.notEqual(merged, base);
  });

  it('an F16 adapter with rslora merges with scale alpha/√r', async () => {
    const adapters = await pushAdapter(safetensors(adapter, 'F16'), config({ use_rslora: true }));
    assert.deepEqual(await ollama.create({ model: 'llama-lora-f16', from: BASE, adapters, stream: false }), { status: 'success' });
    assertMerged(baseGraph, await modelGraph('llama-lora-f16'), adapter, ALPHA / Math.sqrt(R));
  });

  it('with quantize, the adapter is merged into fp32 and then quantized; the model generates', async () => {
    const adapters = await pushAdapter(safetensors(adapter));
    const stream = await ollama.create({ model: 'llama-lora-q8', from: BASE, adapters, quantize: 'q8', stream: true });
    const statuses: string[] = [];
    for await (const ev of stream) statuses.push(ev.status);
    const a = statuses.indexOf('applying adapter');
    const q = statuses.indexOf('quantizing fp32 model to q8');
    assert.ok(a >= 0 && q > a, `merge, then quantize: ${statuses.join(', ')}`);
    assert.ok((await greedy('llama-lora-q8')).length > 0);
  });

  it('errors: unknown module, wrong shapes, missing config or weights, unpushed digest, quantized base', async () => {
    const weights = await push(safetensors(adapter));
    const cfg = await push(config());

    const nope = {
      ...adapter,
      'base_model.model.model.layers.0.self_attn.nope_proj.lora_A.weight': { shape: [R, HIDDEN], data: values(R * HIDDEN, 7) },
      'base_model.model.model.layers.0.self_attn.nope_proj.lora_B.weight': { shape: [HIDDEN, R], data: values(HIDDEN * R, 8) },
    };
    const badModule = await pushAdapter(safetensors(nope), config({ target_modules: ['q_proj', 'v_proj', 'nope_proj'] }));
    assert.match(
      await errorOf(await post({ model: 'e1', from: BASE, adapters: badModule })),
      /'model\.layers\.0\.self_attn\.nope_proj'.*match no MatMul/,
    );

    const wrong = {
      ...adapter,
      'base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight': { shape: [R, 16], data: values(R * 16, 9) },
    };
    assert.match(
      await errorOf(await post({ model: 'e2', from: BASE, adapters: await pushAdapter(safetensors(wrong)) })),
      /'model\.layers\.1\.self_attn\.q_proj'.*\[32, 16\].*\[32, 32\]/,
    );
    const rank = {
      ...adapter,
      'base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight': { shape: [KV, R + 1], data: values(KV * (R + 1), 3) },
    };
    assert.match(
      await errorOf(await post({ model: 'e3', from: BASE, adapters: await pushAdapter(safetensors(rank)) })),
      /v_proj.*expected \[4, in\] and \[out, 4\]/,
    );

    assert.match(
      await errorOf(await post({ model: 'e4', from: BASE, adapters: { 'adapter_model.safetensors': weights } })),
      /adapter_config\.json/,
    );
    assert.match(
      await errorOf(await post({ model: 'e5', from: BASE, adapters: { 'adapter_config.json': cfg } })),
      /adapter_model\.safetensors/,
    );
    const unpushed = sha(new TextEncoder().encode('never pushed adapter'));
    assert.match(
      await errorOf(
        await post({ model: 'e6', from: BASE, adapters: { 'adapter_config.json': cfg, 'adapter_model.safetensors': unpushed } }),
      ),
      /not found/,
    );
    assert.match(
      await errorOf(await post({ model: 'e7', from: BASE, adapters: { 'adapter_config.json': cfg, 'adapter_model.safetensors': cfg } })),
      /safetensors/,
    );

    assert.deepEqual(await ollama.create({ model: 'llama-q8', from: BASE, quantize: 'q8', stream: false }), { status: 'success' });
    assert.match(
      await errorOf(
        await post({ model: 'e8', from: 'llama-q8', adapters: { 'adapter_config.json': cfg, 'adapter_model.safetensors': weights } }),
      ),
      /only be merged into fp32 weights.*q8/,
    );

    assert.equal((await ollama.list()).models.some((m) => /^e\d/.test(m.name)), false, 'nothing created');
  });
});
