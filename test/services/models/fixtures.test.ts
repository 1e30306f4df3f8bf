import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Catalog } from '../../../src/services/models/catalog.ts';
import { PullService } from '../../../src/services/models/pull.ts';
import { FIXTURE_CATALOG, FIXTURE_MODELS_DIR, type HubStandIn, startFixtureHub } from '../../support/hub-stand-in.ts';
import { tempDir } from './repos.ts';
import { greedyOnReferencePrompt, REF } from '../inference/reference.ts';

describe('pulling the tiny fixture models through the hub stand-in', () => {
  let hub: HubStandIn;
  let svc: PullService;
  before(async () => {
    hub = await startFixtureHub();
    const catalog = new Catalog();
    for (const e of FIXTURE_CATALOG) catalog.register(e);
    svc = new PullService({ modelsDir: await tempDir('models'), hubBaseUrl: hub.url, catalog });
  });
  after(() => hub.close());

  for (const entry of FIXTURE_CATALOG) {
    it(`pulls ${entry.name} byte for byte`, async () => {
      const pulled = await (await svc.pull(entry.name)).done;
      const name = entry.repo.split('/')[1];
      for (const f of pulled.local.manifest.files) {
        assert.deepEqual(await readFile(join(pulled.local.dir, f.path)), await readFile(join(FIXTURE_MODELS_DIR, name, f.path)), f.path);
      }
      for (const c of entry.components) {
        assert.ok(pulled.local.manifest.files.some((f) => f.path === `onnx/${c}.onnx`), `onnx/${c}.onnx pulled`);
      }
    });
  }

  it("leaves a layout transformers.js loads offline (localModelPath = modelsDir, id = owner/repo), giving torch's tokens", async () => {
    const pulled = await svc.ensure('tiny-llama');
    const { env, AutoModelForCausalLM, Tensor } = await import('@huggingface/transformers');
    env.localModelPath = `${svc.layout.root}/`;
    env.allowRemoteModels = false;
    const model = await AutoModelForCausalLM.from_pretrained(pulled.spec.repo, { dtype: pulled.spec.dtype });
    assert.deepEqual(await greedyOnReferencePrompt(model, Tensor), REF.generate.greedy_ids);
    await model.dispose();
  });

  it('infers kind and capabilities of hub imports from the model files', async () => {
    const llama = await (await svc.pull('hf.co/svc-test/tiny-llama')).done;
    assert.equal(llama.spec.kind, 'generation');
    assert.equal(llama.spec.dtype, 'q8', 'the default dtype order prefers q8 (model_quantized.onnx)');
    assert.deepEqual(llama.spec.capabilities, ['completion', 'tools', 'thinking']);
    const embed = await (await svc.pull('hf.co/svc-test/tiny-bert-embed')).done;
    assert.deepEqual([embed.spec.kind, embed.spec.capabilities], ['embedding', ['embedding']]);
    assert.ok(embed.local.manifest.files.some((f) => f.path === '1_Pooling/config.json'));
    const rerank = await (await svc.pull('hf.co/svc-test/tiny-bert-reranker')).done;
    assert.equal(rerank.spec.kind, 'reranker');
  });
});
