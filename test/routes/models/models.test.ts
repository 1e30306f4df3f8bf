/**
 * Dialect B model management and dialect A listing, driven by the official `ollama` and `openai` clients
 * (raw HTTP for the error cases) against a listening server whose hub is the local stand-in.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { createInferenceEngine, type InferenceEngine } from '../../../src/services/inference/engine.ts';
import { modelsDir } from '../../../src/config.ts';
import { readLocalCopy } from '../../../src/services/models/manifest.ts';
import { residencyUsage } from '../../../src/services/models/usage.ts';
import { FIXTURE_CATALOG, FIXTURE_MODELS_DIR, type HubStandIn, startFixtureHub } from '../../support/hub-stand-in.ts';
import { listening } from '../../support/server.ts';
import { TEST_ENGINE } from '../../services/inference/fixtures.ts';

type Server = Awaited<ReturnType<typeof listening>>;

let hub: HubStandIn;
let srv: Server;
let ollama: Ollama;
let openai: OpenAI;
let engine: InferenceEngine;

const LLAMA = join(FIXTURE_MODELS_DIR, 'tiny-llama');
const LLAMA_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx'];
const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

async function pushBlob(bytes: Uint8Array, digest = sha(bytes)): Promise<Response> {
  return fetch(`${srv.url}/api/blobs/${digest}`, { method: 'POST', body: bytes as Uint8Array<ArrayBuffer> });
}

/** Pushes the tiny-llama fixture's files; returns the `files` map of a create request. */
async function pushLlamaFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const f of LLAMA_FILES) {
    const bytes = await readFile(join(LLAMA, f));
    const res = await pushBlob(bytes);
    assert.equal(res.status, 201, `push ${f}`);
    files[f] = sha(bytes);
  }
  return files;
}

/** A POST on its own connection; resolves with the status and body even when the server stops reading early. */
function rawPost(path: string, chunks: Uint8Array[], headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${srv.url}${path}`, { method: 'POST', headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    (async () => {
      for (const c of chunks) if (!req.write(c)) await new Promise((r) => req.once('drain', r));
      req.end();
    })().catch(() => {});
  });
}

const post = (path: string, body: unknown, method = 'POST') =>
  fetch(`${srv.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function errorOf(res: Response, status: number): Promise<string> {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${await res.clone().text()}`);
  const body = await res.json();
  assert.equal(typeof body.error, 'string', 'dialect B error envelope { error: string }');
  return body.error;
}

async function specOf(name: string) {
  const s = await srv.models.pulls.resolve(name);
  const local = await readLocalCopy(srv.models.layout, s.spec.repo, s.spec.dtype);
  assert.ok(local, `${name} has a local copy`);
  return { spec: s.spec, dir: local.dir };
}

/** A generation through the engine, from the model's local directory (what the inference routes do). */
async function generate(name: string, maxTokens = 4): Promise<string> {
  const { spec, dir } = await specOf(name);
  const gen = await engine.generate({ name: spec.name, dir, task: 'text-generation', dtype: spec.dtype }, {
    messages: [{ role: 'user', content: 'hi' }],
  }, { maxTokens, temperature: 0 });
  let text = '';
  for await (const t of gen) text += t;
  await gen.result;
  return text;
}

before(async () => {
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'], maxUploadBytes: 2_000_000 });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  engine = createInferenceEngine({ ...TEST_ENGINE, idleDeviceMemoryReleaseSeconds: 0 });
  srv.models.usage = residencyUsage(engine.residency);
  ollama = new Ollama({ host: srv.url });
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  await engine?.close();
  await srv?.stop();
  await hub?.close();
});

describe('listing before any download', () => {
  it('/api/tags lists catalog entries without modified_at', async () => {
    const { models } = await ollama.list();
    const tiny = models.find((m) => m.name === 'tiny-llama:test');
    assert.ok(tiny, 'fixture entry listed');
    assert.equal('modified_at' in tiny, false);
    assert.equal(tiny.size, 0);
    assert.match(tiny.digest, /^[0-9a-f]{64}$/);
    assert.equal(tiny.details.format, 'onnx');
    assert.equal(tiny.details.family, 'llama');
    assert.ok(models.some((m) => m.name === 'qwen3:0.6b'), 'built-in catalog listed too');
  });

  it('/v1/models lists and retrieves ids with ":" and "/", 404 in the dialect A envelope', async () => {
    const page = await openai.models.list();
    const tiny = page.data.find((m) => m.id === 'tiny-llama:test');
    assert.deepEqual(tiny && { object: tiny.object, owned_by: tiny.owned_by }, { object: 'model', owned_by: 'library' });
    const got = await openai.models.retrieve('tiny-llama:test');
    assert.equal(got.id, 'tiny-llama:test');
    await assert.rejects(openai.models.retrieve('hf.co/nobody/nothing:q4'), (e: unknown) => {
      assert.ok(e instanceof OpenAI.NotFoundError, String(e));
      assert.match(String((e as InstanceType<typeof OpenAI.NotFoundError>).message), /does not exist/);
      return true;
    });
    const raw = await fetch(`${srv.url}/v1/models/hf.co/nobody/nothing:q4`);
    assert.equal(raw.status, 404);
    assert.equal(typeof (await raw.json()).error.message, 'string');
  });
});

describe('pull', () => {
  it('streams progress ending with success; tags then has modified_at and size', async () => {
    const stream = await ollama.pull({ model: 'tiny-llama:test', stream: true });
    const events: { status: string; digest?: string; total?: number; completed?: number }[] = [];
    for await (const ev of stream) events.push(ev);
    assert.equal(events[0].status, 'pulling manifest');
    assert.equal(events.at(-1)!.status, 'success');
    const file = events.find((e) => e.digest && e.total);
    assert.ok(file && typeof file.completed === 'number', 'per-file progress with digest, total, completed');
    const tiny = (await ollama.list()).models.find((m) => m.name === 'tiny-llama:test')!;
    assert.ok(tiny.modified_at, 'modified_at present for a local copy');
    assert.ok(tiny.size > 200_000);
  });

  it('stream:false blocks and returns the terminal object', async () => {
    const res = await ollama.pull({ model: 'tiny-bert-embed:test', stream: false });
    assert.deepEqual(res, { status: 'success' });
  });

  it('unknown model: 404 before streaming', async () => {
    assert.match(await errorOf(await post('/api/pull', { model: 'no-such-model:1b' }), 404), /not found/);
  });
});

describe('show', () => {
  it('details, model_info from config.json, capabilities from the template and architecture', async () => {
    const s = await ollama.show({ model: 'tiny-llama:test' });
    assert.deepEqual(s.capabilities, ['completion', 'tools', 'thinking']);
    const info = s.model_info as unknown as Record<string, unknown>;
    assert.equal(info['general.architecture'], 'llama');
    assert.equal(info['llama.context_length'], 512);
    assert.equal(info['llama.block_count'], 2);
    assert.equal(s.details.format, 'onnx');
    assert.equal(s.details.quantization_level, 'FP32');
    assert.match(s.template, /enable_thinking/);
    assert.equal(typeof s.modelfile, 'string');
    assert.equal(typeof s.parameters, 'string');
    const embed = await ollama.show({ model: 'tiny-bert-embed:test' });
    assert.deepEqual(embed.capabilities, ['embedding']);
  });

  it('404 for an unknown model', async () => {
    await errorOf(await post('/api/show', { model: 'nope:1b' }), 404);
  });
});

describe('blobs', () => {
  it('HEAD 404, POST 201, HEAD 200', async () => {
    const bytes = new TextEncoder().encode('hello blob');
    const digest = sha(bytes);
    assert.equal((await fetch(`${srv.url}/api/blobs/${digest}`, { method: 'HEAD' })).status, 404);
    assert.equal((await pushBlob(bytes)).status, 201);
    assert.equal((await fetch(`${srv.url}/api/blobs/${digest}`, { method: 'HEAD' })).status, 200);
  });

  it('digest mismatch: 400 and nothing left behind', async () => {
    const wrong = sha(new TextEncoder().encode('something else'));
    const before = await readdir(join(modelsDir(srv.config), '.blobs')).catch(() => [] as string[]);
    assert.match(await errorOf(await pushBlob(new TextEncoder().encode('the real bytes'), wrong), 400), /digest mismatch/);
    assert.equal((await fetch(`${srv.url}/api/blobs/${wrong}`, { method: 'HEAD' })).status, 404);
    assert.deepEqual(await readdir(join(modelsDir(srv.config), '.blobs')), before);
  });

  it('oversized blob: 413, declared or streamed, and nothing left behind', async () => {
    // Own connections (agent: false): the server stops reading an oversized body and closes the socket.
    const big = new Uint8Array(2_000_001);
    const declared = await rawPost(`/api/blobs/${sha(big)}`, [big], { 'content-length': String(big.byteLength) });
    assert.equal(declared.status, 413);
    assert.equal(typeof JSON.parse(declared.body).error, 'string');
    const streamed = await rawPost(
      `/api/blobs/${sha(new Uint8Array(2_500_000))}`,
      Array.from({ length: 5 }, () => new Uint8Array(500_000)),
      { 'transfer-encoding': 'chunked' },
    );
    assert.equal(streamed.status, 413);
    const left = await readdir(join(modelsDir(srv.config), '.blobs'));
    assert.equal(left.filter((n) => n.startsWith('.incoming')).length, 0);
    assert.equal(left.includes(`sha256-${sha(new Uint8Array(2_500_000)).slice(7)}`), false);
  });

  it('malformed digest: 400', async () => {
    await errorOf(await fetch(`${srv.url}/api/blobs/md5:abc`, { method: 'POST', body: 'x' }), 400);
  });
});

describe('create, copy, delete', () => {
  let files: Record<string, string>;
  before(async () => {
    files = await pushLlamaFiles();
  });

  it('creates from pushed files with q8 quantization, progress streamed; listed Unverified', async () => {
    const stream = await ollama.create(
      {
        model: 'my-llama',
        files,
        quantize: 'q8',
        system: 'Be brief.',
        parameters: { temperature: 0.2, stop: ['</s>'] },
        stream: true,
      } as never,
    );
    const events: { status: string; total?: number; completed?: number }[] = [];
    for await (const ev of stream as AsyncIterable<{ status: string }>) events.push(ev);
    const quant = events.filter((e) => e.status === 'quantizing fp32 model to q8');
    assert.ok(quant.length > 0, `quantization progress streamed: ${events.map((e) => e.status).join(', ')}`);
    assert.equal(quant.at(-1)!.completed, quant.at(-1)!.total);
    assert.equal(events.at(-1)!.status, 'success');

    const tag = (await ollama.list()).models.find((m) => m.name === 'my-llama:latest') as unknown as Record<string, any>;
    assert.ok(tag, 'created model listed');
    assert.equal(tag.unverified, true);
    assert.equal(tag.details.quantization_level, 'Q8');
    assert.ok(tag.modified_at);
    const oa = await openai.models.retrieve('my-llama:latest');
    assert.equal(oa.owned_by, 'unverified');

    const s = await ollama.show({ model: 'my-llama' });
    assert.deepEqual(s.capabilities, ['completion', 'tools', 'thinking']);
    assert.equal(s.system, 'Be brief.');
    assert.match(s.parameters, /temperature\s+0.2/);
    assert.match(s.parameters, /stop\s+"<\/s>"/);
    assert.match(s.modelfile, /SYSTEM """Be brief."""/);
    const { dir } = await specOf('my-llama');
    assert.deepEqual((await readdir(join(dir, 'onnx'))).sort(), ['model_quantized.onnx'], 'only the q8 graph is part of the model');
  });

  it('a created (quantized) model generates through the engine', async () => {
    const text = await generate('my-llama');
    assert.equal(typeof text, 'string');
    assert.ok(text.length > 0, 'generated some text');
  });

  it('creates from a catalog model with stream:false; blob files are hard links, not copies', async () => {
    const res = await ollama.create({ model: 'tiny-bot', from: 'tiny-llama:test', template: '{{ messages[0].content }}', stream: false });
    assert.deepEqual(res, { status: 'success' });
    const s = await ollama.show({ model: 'tiny-bot' });
    assert.equal(s.details.parent_model, 'tiny-llama:test');
    assert.deepEqual(s.capabilities, ['completion'], 'a template without tools/thinking drops those capabilities');
    const { dir } = await specOf('tiny-bot');
    const { dir: baseDir } = await specOf('tiny-llama:test');
    assert.equal((await stat(join(dir, 'onnx/model.onnx'))).ino, (await stat(join(baseDir, 'onnx/model.onnx'))).ino);
  });

  it('create errors: unpushed digest, unknown from, unsupported quantize, missing files, adapters', async () => {
    const unpushed = sha(new TextEncoder().encode('never pushed'));
    assert.match(await errorOf(await post('/api/create', { model: 'x1', files: { ...files, 'config.json': unpushed } }), 400), /not found/);
    assert.match(await errorOf(await post('/api/create', { model: 'x2', from: 'no-such-model:7b' }), 404), /not found/);
    assert.match(
      await errorOf(await post('/api/create', { model: 'x3', files, quantize: 'q4_K_M' }), 400),
      /unsupported quantize target 'q4_K_M'/,
    );
    const { 'tokenizer.json': _t, ...withoutTokenizer } = files;
    assert.match(await errorOf(await post('/api/create', { model: 'x4', files: withoutTokenizer }), 400), /tokenizer\.json/);
    assert.match(
      await errorOf(
        await post('/api/create', { model: 'x5', from: 'tiny-llama:test', adapters: { 'adapter.safetensors': files['config.json'] } }),
        400,
      ),
      /adapter_config\.json/,
    );
    assert.match(await errorOf(await post('/api/create', { model: 'tiny-llama:test', from: 'tiny-llama:test' }), 400), /catalog/);
    assert.match(await errorOf(await post('/api/create', { model: 'x6' }), 400), /from/);
    assert.equal((await ollama.list()).models.some((m) => /^x\d/.test(m.name)), false, 'nothing created');
  });

  it('q4 quantization produces a MatMulNBits model that generates', async () => {
    const res = await ollama.create({ model: 'my-llama:q4', files, quantize: 'q4_0', stream: false } as never);
    assert.deepEqual(res, { status: 'success' });
    const { spec, dir } = await specOf('my-llama:q4');
    assert.equal(spec.dtype, 'q4');
    assert.deepEqual(await readdir(join(dir, 'onnx')), ['model_q4.onnx']);
    assert.ok((await generate('my-llama:q4')).length > 0);
  });

  it('copy shares files; deleting the source keeps the copy working', async () => {
    await ollama.copy({ source: 'my-llama', destination: 'my-llama-copy' });
    const a = await specOf('my-llama');
    const b = await specOf('my-llama-copy');
    assert.notEqual(a.dir, b.dir);
    assert.equal(
      (await stat(join(a.dir, 'onnx/model_quantized.onnx'))).ino,
      (await stat(join(b.dir, 'onnx/model_quantized.onnx'))).ino,
      'no duplicated bytes',
    );
    const shown = await ollama.show({ model: 'my-llama-copy' });
    assert.equal(shown.system, 'Be brief.', 'profile carried over');

    await ollama.delete({ model: 'my-llama' });
    const names = (await ollama.list()).models.map((m) => m.name);
    assert.ok(!names.includes('my-llama:latest'));
    assert.ok(names.includes('my-llama-copy:latest'));
    assert.ok((await generate('my-llama-copy')).length > 0, 'the copy still generates');
    await errorOf(await post('/api/show', { model: 'my-llama' }), 404);
  });

  it('copy errors: unknown source 404, bad destination 400', async () => {
    await errorOf(await post('/api/copy', { source: 'nope:1b', destination: 'y' }), 404);
    await errorOf(await post('/api/copy', { source: 'my-llama-copy', destination: 'bad name!' }), 400);
    await errorOf(await post('/api/copy', { source: 'my-llama-copy', destination: 'tiny-llama:test' }), 400);
    await errorOf(await post('/api/copy', { source: 'my-llama-copy' }), 400);
  });

  it('delete while a generation is running: 409; afterwards it goes', async () => {
    await ollama.copy({ source: 'tiny-llama:test', destination: 'busy-llama' });
    const { spec, dir } = await specOf('busy-llama');
    const ac = new AbortController();
    // the model samples: with its end-of-sequence tokens masked it cannot finish before the delete is tried
    const { eos_token_id: eos } = JSON.parse(await readFile(join(dir, 'generation_config.json'), 'utf8')) as { eos_token_id: number[] };
    const noEos = (_ids: bigint[][], logits: { data: Float32Array }) => {
      for (const id of eos) logits.data[id] = -Infinity;
      return logits;
    };
    const gen = await engine.generate({ name: spec.name, dir, task: 'text-generation', dtype: spec.dtype }, {
      messages: [{ role: 'user', content: 'hi' }],
    }, { maxTokens: 400, signal: ac.signal, logitsProcessors: [noEos] });
    const it = gen[Symbol.asyncIterator]();
    await it.next(); // generation under way, slot held
    assert.match(await errorOf(await post('/api/delete', { model: 'busy-llama' }, 'DELETE'), 409), /serving requests/);
    assert.ok((await ollama.list()).models.some((m) => m.name === 'busy-llama:latest'), 'still listed');
    ac.abort();
    await gen.result.catch(() => {});
    await it.return?.();
    assert.equal(engine.residency.isLoaded('busy-llama:latest'), true, 'loaded before the delete');
    await ollama.delete({ model: 'busy-llama' });
    assert.equal(engine.residency.isLoaded('busy-llama:latest'), false, 'unloaded by the delete');
    assert.equal(await stat(dir).catch(() => null), null, 'files removed');
  });

  it('deleting a catalog model removes its files; the entry stays listed; a second delete is 404', async () => {
    const { dir } = await specOf('tiny-bert-embed:test');
    await ollama.delete({ model: 'tiny-bert-embed:test' });
    const entry = (await ollama.list()).models.find((m) => m.name === 'tiny-bert-embed:test')!;
    assert.ok(entry, 'catalog entry still listed');
    assert.equal('modified_at' in entry, false);
    assert.equal(await stat(join(dir, 'onnx/model.onnx')).catch(() => null), null);
    await errorOf(await post('/api/delete', { model: 'tiny-bert-embed:test' }, 'DELETE'), 404);
    await errorOf(await post('/api/delete', { model: 'never-heard-of:it' }, 'DELETE'), 404);
  });

  it('pull of a created model succeeds from its local files', async () => {
    assert.deepEqual(await ollama.pull({ model: 'my-llama-copy', stream: false }), { status: 'success' });
  });
});

describe('push', () => {
  it('is always 501 with a dialect B error', async () => {
    assert.match(await errorOf(await post('/api/push', { model: 'tiny-llama:test' }), 501), /not supported/);
    await assert.rejects(ollama.push({ model: 'tiny-llama:test' }), (e: Error & { status_code?: number }) => e.status_code === 501);
  });
});
