/** A read-only model directory: 503 for imports without a work directory; with one, old models serve and new imports land there. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { startFixtureHub } from '../../support/hub-stand-in.ts';
import { listening, tempDir } from '../../support/server.ts';

const LLAMA = 'hf.co/svc-test/tiny-llama:fp32';
const EMBED = 'hf.co/svc-test/tiny-bert-embed';
const post = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const generate = async (url: string) => {
  const r = await post(url, '/api/generate', { model: LLAMA, prompt: 'Hi', stream: false, options: { temperature: 0, num_predict: 4 } });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).response as string;
};

test('read-only model directory: 503 model_store_read_only without a work directory; with one, models serve and imports land there', async () => {
  const hub = await startFixtureHub();
  const dataDir = await tempDir();
  const modelsDir = join(dataDir, 'models');
  const hubCfg = { hubUrl: hub.url, hubAllowedHosts: ['hf.co'] };
  const first = await listening({ dataDir, ...hubCfg });
  assert.deepEqual(await (await post(first.url, '/api/pull', { model: LLAMA, stream: false })).json(), { status: 'success' });
  const before = await generate(first.url);
  await first.stop();
  execFileSync('chattr', ['-R', '+i', modelsDir]); // read-only even for root
  try {
    const listing = async () => (await readdir(modelsDir, { recursive: true })).sort();
    const untouched = await listing();

    const noWork = await listening({ dataDir, ...hubCfg });
    try {
      const refused = await post(noWork.url, '/api/pull', { model: EMBED, stream: false });
      assert.equal(refused.status, 503);
      assert.equal(refused.headers.get('retry-after'), '5');
      assert.match((await refused.json()).error, /read-only/);
      assert.equal(await generate(noWork.url), before, 'existing models still serve');
    } finally {
      await noWork.stop();
    }

    const workDir = await tempDir();
    const withWork = await listening({ dataDir, modelWorkDir: workDir, ...hubCfg });
    try {
      const tags = await (await fetch(`${withWork.url}/api/tags`)).json();
      const llama = tags.models.find((m: { name: string }) => m.name.startsWith('hf.co/svc-test/tiny-llama'));
      assert.ok(llama?.modified_at, 'the read-only model is listed as downloaded');
      assert.equal(await generate(withWork.url), before);
      assert.deepEqual(await (await post(withWork.url, '/api/pull', { model: EMBED, stream: false })).json(), { status: 'success' });
      const emb = await (await post(withWork.url, '/api/embed', { model: EMBED, input: 'hello' })).json();
      assert.equal(emb.embeddings.length, 1);
      assert.ok(
        (await readdir(workDir, { recursive: true })).some((p) => p.includes('tiny-bert-embed')),
        'the import is in the work directory',
      );
      assert.deepEqual(await listing(), untouched, 'the read-only directory is unchanged');
    } finally {
      await withWork.stop();
    }
  } finally {
    execFileSync('chattr', ['-R', '-i', modelsDir]);
    await hub.close();
  }
});
