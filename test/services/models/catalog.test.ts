import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BUILTIN_CATALOG, Catalog } from '../../../src/services/models/catalog.ts';
import { detectComponents, onnxPath, pickDefaultDtype, selectFiles } from '../../../src/services/models/files.ts';
import { asHubReference, nameKey, parseModelName } from '../../../src/services/models/names.ts';
import { quantToDtype } from '../../../src/services/models/resolve.ts';
import { isServiceError } from '../../../src/services/errors.ts';
import { HubClient } from '../../../src/services/models/hub.ts';
import { inferProfile } from '../../../src/services/models/profile.ts';
import { DTYPES } from '../../../src/services/models/spec.ts';
import { HubStandIn } from '../../support/hub-stand-in.ts';
import { HUB_FACTS } from './hub-metadata.ts';
import { tempDir } from './repos.ts';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

describe('catalog name resolution (Ollama rules)', () => {
  const catalog = new Catalog();

  it('fills in the latest tag and the library namespace, case-insensitively', () => {
    assert.equal(catalog.resolve('qwen3')?.name, 'qwen3:0.6b');
    assert.equal(catalog.resolve('QWEN3:LATEST')?.name, 'qwen3:0.6b');
    assert.equal(catalog.resolve('registry.ollama.ai/library/qwen3:0.6b')?.name, 'qwen3:0.6b');
    assert.equal(catalog.resolve('library/Qwen2.5:0.5B')?.repo, 'onnx-community/Qwen2.5-0.5B-Instruct');
    assert.equal(nameKey('Qwen3'), 'qwen3:latest');
  });

  it('pins a few entries: the names Ollama users type reach the repositories they mean', () => {
    assert.equal(catalog.resolve('qwen3')?.repo, 'onnx-community/Qwen3-0.6B-ONNX');
    assert.equal(catalog.resolve('all-minilm')?.repo, 'Xenova/all-MiniLM-L6-v2');
    assert.equal(catalog.resolve('whisper')?.repo, 'onnx-community/whisper-tiny_timestamped');
    assert.equal(catalog.resolve('qwen2.5:0.5b-q4f16')?.dtype, 'q4f16');
  });

  it('returns nothing for unknown names, 400 for malformed ones', () => {
    assert.equal(catalog.resolve('no-such-model'), undefined);
    assert.equal(catalog.resolve('qwen3:7b'), undefined);
    assert.throws(() => catalog.resolve('bad name!'), (e) => isServiceError(e) && e.status === 400);
  });

  it('accepts test entries at runtime and forgets them again', () => {
    const c = new Catalog([]);
    c.register({
      name: 'tiny-llama:test',
      aliases: ['tiny-llama'],
      repo: 'svc-test/tiny-llama',
      dtype: 'fp32',
      kind: 'generation',
      capabilities: ['completion'],
      components: ['model'],
    });
    assert.equal(c.resolve('Tiny-Llama')?.repo, 'svc-test/tiny-llama');
    assert.equal(c.list().length, 1);
    assert.ok(c.unregister('tiny-llama:test'));
    assert.equal(c.resolve('tiny-llama'), undefined);
    assert.throws(() =>
      c.register({ name: 'x', repo: '../etc', dtype: 'fp32', kind: 'generation', capabilities: [], components: ['model'] })
    );
  });

  it('reads hub references with optional quant', () => {
    assert.deepEqual(asHubReference(parseModelName('hf.co/Owner/Repo-ONNX:Q4')), {
      host: 'hf.co',
      owner: 'Owner',
      repo: 'Repo-ONNX',
      quant: 'Q4',
    });
    assert.deepEqual(asHubReference(parseModelName('127.0.0.1:8080/o/r')), {
      host: '127.0.0.1:8080',
      owner: 'o',
      repo: 'r',
      quant: 'latest',
    });
    assert.equal(asHubReference(parseModelName('someone/model')), undefined);
    assert.equal(quantToDtype('Q4'), 'q4');
    assert.equal(quantToDtype('latest'), undefined);
    assert.equal(quantToDtype('quantized'), 'q8');
    assert.throws(() => quantToDtype('Q4_K_M'), (e) => isServiceError(e) && e.status === 400);
  });
});

describe('file selection', () => {
  const siblings = [
    'config.json',
    'tokenizer.json',
    'tokenizer_config.json',
    'generation_config.json',
    'README.md',
    'onnx/model.onnx',
    'onnx/model_q4.onnx',
    'onnx/model_q4f16.onnx',
    'onnx/model_q4f16.onnx_data',
    'onnx/model_q4f16.onnx_data_1',
    '../evil.json',
  ].map((rfilename) => ({ rfilename }));

  it('takes configs, tokenizer and the dtype graph with its external data', () => {
    assert.deepEqual(selectFiles(siblings, { repo: 'o/r', dtype: 'q4f16', components: ['model'] }).map((s) => s.rfilename), [
      'config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'generation_config.json',
      'onnx/model_q4f16.onnx',
      'onnx/model_q4f16.onnx_data',
      'onnx/model_q4f16.onnx_data_1',
    ]);
    assert.deepEqual(selectFiles(siblings, { repo: 'o/r', dtype: 'q4', components: ['model'] }).map((s) => s.rfilename).slice(4), [
      'onnx/model_q4.onnx',
    ]);
  });

  it('answers 404 when the repository lacks the dtype', () => {
    assert.throws(
      () => selectFiles(siblings, { repo: 'o/r', dtype: 'q8', components: ['model'] }),
      (e) => isServiceError(e) && e.status === 404 && /model_quantized\.onnx/.test(e.message),
    );
  });

  it('picks a default dtype and detects encoder/decoder repos', () => {
    const names = siblings.map((s) => s.rfilename);
    assert.equal(pickDefaultDtype(names, ['model']), 'q4');
    const whisper = ['onnx/encoder_model_quantized.onnx', 'onnx/decoder_model_merged_quantized.onnx'];
    assert.deepEqual(detectComponents(whisper), ['encoder_model', 'decoder_model_merged']);
    assert.equal(pickDefaultDtype(whisper, detectComponents(whisper)), 'q8');
  });
});

describe("every built-in catalog entry holds against the hub's own metadata", () => {
  let hub: HubStandIn;
  let client: HubClient;
  const dirs: Record<string, string> = {};
  before(async () => {
    // Each repository served by the stand-in with the hub's file names, pipeline tag, config and template.
    const root = await tempDir('catalog-hub');
    const repos: Record<string, { dir: string; pipelineTag: string }> = {};
    for (const [repo, f] of Object.entries(HUB_FACTS)) {
      const dir = join(root, repo);
      for (const file of f.files) {
        await mkdir(dirname(join(dir, file)), { recursive: true });
        const body = file === 'config.json'
          ? JSON.stringify(f.config)
          : file === 'tokenizer_config.json'
          ? JSON.stringify(f.template ? { chat_template: f.template } : {})
          : '{}';
        await writeFile(join(dir, file), body);
      }
      repos[repo] = { dir, pipelineTag: f.pipeline_tag };
      dirs[repo] = dir;
    }
    hub = await HubStandIn.start(repos);
    client = new HubClient({ baseUrl: hub.url });
  });
  after(() => hub.close());

  it('names, aliases and repositories are well formed and unambiguous', () => {
    const seen = new Map<string, string>();
    for (const e of BUILTIN_CATALOG) {
      assert.match(e.name, /^[a-z0-9][a-z0-9._-]*:[a-z0-9][a-z0-9._-]*$/, e.name);
      assert.ok((DTYPES as readonly string[]).includes(e.dtype), `${e.name}: dtype ${e.dtype}`);
      for (const n of [e.name, ...(e.aliases ?? [])]) {
        const key = nameKey(n);
        assert.ok(!seen.has(key), `${n} names both ${seen.get(key)} and ${e.name}`);
        seen.set(key, e.name);
        assert.equal(new Catalog().resolve(n)?.name, e.name);
      }
    }
  });

  for (const e of BUILTIN_CATALOG) {
    it(`${e.name}: the repository has the dtype's graphs, and kind and capabilities agree with what the hub says`, async () => {
      const facts = HUB_FACTS[e.repo];
      assert.ok(facts, `no hub facts transcribed for ${e.repo}`);
      const info = await client.modelInfo(e.repo);
      // The files a pull of this entry would fetch all exist (selectFiles throws 404 for any missing).
      const picked = selectFiles(info.siblings, e).map((s) => s.rfilename);
      for (const c of e.components) assert.ok(picked.includes(onnxPath(c, e.dtype)), `${e.name}: ${onnxPath(c, e.dtype)}`);
      assert.deepEqual(e.components, detectComponents(info.siblings.map((s) => s.rfilename)));
      // What an import of the same repository would infer is what the entry declares (show and tags agree).
      const profile = await inferProfile(dirs[e.repo]!, info.pipeline_tag);
      assert.equal(e.kind, profile.kind, `${e.name}: kind`);
      assert.deepEqual([...e.capabilities].sort(), [...profile.capabilities].sort(), `${e.name}: capabilities`);
      assert.equal(!!e.embedding, e.kind === 'embedding', `${e.name}: pooling given exactly for embedding models`);
      // The quantization level shown is the dtype's.
      const level = { q4: 'Q4', q4f16: 'Q4F16', q8: 'Q8_0', fp32: 'F32', fp16: 'F16', int8: 'Q8_0', uint8: 'Q8_0', bnb4: 'Q4' }[e.dtype];
      assert.equal(e.details?.quantization_level, level, `${e.name}: quantization level`);
    });
  }
});
