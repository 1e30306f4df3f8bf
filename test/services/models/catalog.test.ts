import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Catalog } from '../../../src/services/models/catalog.ts';
import { detectComponents, pickDefaultDtype, selectFiles } from '../../../src/services/models/files.ts';
import { asHubReference, nameKey, parseModelName } from '../../../src/services/models/names.ts';
import { quantToDtype } from '../../../src/services/models/resolve.ts';
import { isServiceError } from '../../../src/services/errors.ts';

describe('catalog name resolution (Ollama rules)', () => {
  const catalog = new Catalog();

  it('fills in the latest tag and the library namespace, case-insensitively', () => {
    assert.equal(catalog.resolve('qwen3')?.name, 'qwen3:0.6b');
    assert.equal(catalog.resolve('QWEN3:LATEST')?.name, 'qwen3:0.6b');
    assert.equal(catalog.resolve('registry.ollama.ai/library/qwen3:0.6b')?.name, 'qwen3:0.6b');
    assert.equal(catalog.resolve('library/Qwen2.5:0.5B')?.repo, 'onnx-community/Qwen2.5-0.5B-Instruct');
    assert.equal(nameKey('Qwen3'), 'qwen3:latest');
  });

  it('maps friendly names to ONNX repos, dtypes, kinds and capabilities', () => {
    assert.deepEqual(
      ['qwen2.5:0.5b', 'qwen3:0.6b', 'smollm2:360m', 'all-minilm:l6', 'ms-marco-minilm:l6', 'whisper:tiny'].map((n) => {
        const e = catalog.resolve(n)!;
        return [e.repo, e.dtype, e.kind];
      }),
      [
        ['onnx-community/Qwen2.5-0.5B-Instruct', 'q4', 'generation'],
        ['onnx-community/Qwen3-0.6B-ONNX', 'q4', 'generation'],
        ['HuggingFaceTB/SmolLM2-360M-Instruct', 'q4', 'generation'],
        ['Xenova/all-MiniLM-L6-v2', 'q8', 'embedding'],
        ['Xenova/ms-marco-MiniLM-L-6-v2', 'q8', 'reranker'],
        ['Xenova/whisper-tiny', 'q8', 'speech'],
      ],
    );
    assert.ok(catalog.resolve('qwen3:0.6b')!.capabilities.includes('thinking'));
    assert.ok(catalog.resolve('nomic-embed-text')!.capabilities.includes('embedding'));
    assert.deepEqual(catalog.resolve('whisper')!.components, ['encoder_model', 'decoder_model_merged']);
  });

  it('returns nothing for unknown names, 400 for malformed ones', () => {
    assert.equal(catalog.resolve('no-such-model'), undefined);
    assert.equal(catalog.resolve('qwen3:7b'), undefined);
    assert.throws(() => catalog.resolve('bad name!'), (e) => isServiceError(e) && e.status === 400);
  });

  it('accepts test entries at runtime and forgets them again', () => {
    const c = new Catalog([]);
    c.register({ name: 'tiny-llama:test', aliases: ['tiny-llama'], repo: 'svc-test/tiny-llama', dtype: 'fp32', kind: 'generation', capabilities: ['completion'], components: ['model'] });
    assert.equal(c.resolve('Tiny-Llama')?.repo, 'svc-test/tiny-llama');
    assert.equal(c.list().length, 1);
    assert.ok(c.unregister('tiny-llama:test'));
    assert.equal(c.resolve('tiny-llama'), undefined);
    assert.throws(() => c.register({ name: 'x', repo: '../etc', dtype: 'fp32', kind: 'generation', capabilities: [], components: ['model'] }));
  });

  it('reads hub references with optional quant', () => {
    assert.deepEqual(asHubReference(parseModelName('hf.co/Owner/Repo-ONNX:Q4')), { host: 'hf.co', owner: 'Owner', repo: 'Repo-ONNX', quant: 'Q4' });
    assert.deepEqual(asHubReference(parseModelName('127.0.0.1:8080/o/r')), { host: '127.0.0.1:8080', owner: 'o', repo: 'r', quant: 'latest' });
    assert.equal(asHubReference(parseModelName('someone/model')), undefined);
    assert.equal(quantToDtype('Q4'), 'q4');
    assert.equal(quantToDtype('latest'), undefined);
    assert.equal(quantToDtype('quantized'), 'q8');
    assert.throws(() => quantToDtype('Q4_K_M'), (e) => isServiceError(e) && e.status === 400);
  });
});

describe('file selection', () => {
  const siblings = [
    'config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'README.md',
    'onnx/model.onnx', 'onnx/model_q4.onnx', 'onnx/model_q4f16.onnx', 'onnx/model_q4f16.onnx_data', 'onnx/model_q4f16.onnx_data_1',
    '../evil.json',
  ].map((rfilename) => ({ rfilename }));

  it('takes configs, tokenizer and the dtype graph with its external data', () => {
    assert.deepEqual(selectFiles(siblings, { repo: 'o/r', dtype: 'q4f16', components: ['model'] }).map((s) => s.rfilename), [
      'config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json',
      'onnx/model_q4f16.onnx', 'onnx/model_q4f16.onnx_data', 'onnx/model_q4f16.onnx_data_1',
    ]);
    assert.deepEqual(selectFiles(siblings, { repo: 'o/r', dtype: 'q4', components: ['model'] }).map((s) => s.rfilename).slice(4), ['onnx/model_q4.onnx']);
  });

  it('answers 404 when the repository lacks the dtype', () => {
    assert.throws(() => selectFiles(siblings, { repo: 'o/r', dtype: 'q8', components: ['model'] }),
      (e) => isServiceError(e) && e.status === 404 && /model_quantized\.onnx/.test(e.message));
  });

  it('picks a default dtype and detects encoder/decoder repos', () => {
    const names = siblings.map((s) => s.rfilename);
    assert.equal(pickDefaultDtype(names, ['model']), 'q4');
    const whisper = ['onnx/encoder_model_quantized.onnx', 'onnx/decoder_model_merged_quantized.onnx'];
    assert.deepEqual(detectComponents(whisper), ['encoder_model', 'decoder_model_merged']);
    assert.equal(pickDefaultDtype(whisper, detectComponents(whisper)), 'q8');
  });
});
