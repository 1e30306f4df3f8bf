import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isServiceError, type ServiceError } from '../../../src/services/errors.ts';
import { Catalog } from '../../../src/services/models/catalog.ts';
import { listModels } from '../../../src/services/models/local.ts';
import type { PullProgress } from '../../../src/services/models/progress.ts';
import { PullService, type PullServiceOptions } from '../../../src/services/models/pull.ts';
import { HubStandIn } from '../../support/hub-stand-in.ts';
import { makeRepo, tempDir } from './repos.ts';

const REPO = 'test-org/tiny-chat';
const ONNX = 'onnx/model.onnx';
const ONNX_SIZE = 300_000;

let hub: HubStandIn;
let repoDir: string;

before(async () => {
  const root = await tempDir('hub');
  repoDir = await makeRepo(root, 'tiny-chat', { onnx: { [ONNX]: ONNX_SIZE, 'onnx/model_q4.onnx': 120_000 } });
  const embed = await makeRepo(root, 'tiny-embed', { config: { architectures: ['BertModel'], model_type: 'bert' } });
  hub = await HubStandIn.start({ [REPO]: repoDir, 'test-org/tiny-embed': { dir: embed, pipelineTag: 'feature-extraction' } });
});
after(() => hub.close());

function testCatalog(): Catalog {
  const c = new Catalog();
  c.register({
    name: 'tiny-chat:test',
    aliases: ['tiny-chat'],
    repo: REPO,
    dtype: 'fp32',
    kind: 'generation',
    capabilities: ['completion', 'tools'],
    components: ['model'],
  });
  return c;
}

async function service(opts: Partial<PullServiceOptions> = {}): Promise<PullService> {
  hub.reset();
  return new PullService({ modelsDir: await tempDir('models'), hubBaseUrl: hub.url, catalog: testCatalog(), retryDelayMs: 10, ...opts });
}

async function collect(it: AsyncIterable<PullProgress>): Promise<PullProgress[]> {
  const out: PullProgress[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const exists = (p: string) => stat(p).then(() => true, () => false);
const rejectsWith = (p: Promise<unknown>, status: number, reason: string) =>
  assert.rejects(p, (e: unknown) => {
    assert.ok(isServiceError(e), `expected a ServiceError, got ${e}`);
    assert.equal(e.status, status, e.message);
    assert.equal(e.reason, reason);
    return true;
  });

/** Nothing of a failed pull is visible: no model directory, no manifest, no partial or staged file. */
async function assertNothingLeft(svc: PullService) {
  const root = svc.layout.root;
  assert.equal(await exists(join(root, 'test-org')), false, 'model directory exists');
  assert.equal(await exists(join(root, '.manifests', 'test-org')), false, 'manifest exists');
  const partial = await readdir(join(root, '.partial'), { recursive: true }).catch(() => [] as string[]);
  assert.deepEqual(partial.filter((p) => p !== 'blobs'), [], 'partial files left');
}

describe('pull', () => {
  it('streams Ollama progress objects and ends with success; the copy is complete and listed', async () => {
    const svc = await service();
    const handle = await svc.pull('tiny-chat');
    assert.equal(handle.name, 'tiny-chat:test');
    assert.equal(handle.joined, false);
    const events = await collect(handle.progress());
    const statuses = events.map((e) => e.status);
    assert.equal(statuses[0], 'pulling manifest');
    assert.deepEqual(statuses.slice(-3), ['verifying sha256 digest', 'writing manifest', 'success']);
    const layers = events.filter((e) => e.status.startsWith('pulling ') && e.digest);
    assert.ok(layers.length >= 5);
    for (const e of layers) {
      assert.match(e.status, /^pulling [0-9a-f]{12}$/);
      assert.match(e.digest!, /^(sha256:[0-9a-f]{64}|sha1:[0-9a-f]{40})$/);
      assert.ok(Number.isInteger(e.total) && Number.isInteger(e.completed) && e.completed! <= e.total!);
    }
    const onnxSha = sha256(await readFile(join(repoDir, ONNX)));
    const onnxEvents = layers.filter((e) => e.digest === `sha256:${onnxSha}`);
    assert.deepEqual(onnxEvents.at(-1), {
      status: `pulling ${onnxSha.slice(0, 12)}`,
      digest: `sha256:${onnxSha}`,
      total: ONNX_SIZE,
      completed: ONNX_SIZE,
    });

    const pulled = await handle.done;
    assert.equal(pulled.spec.name, 'tiny-chat:test');
    assert.equal(pulled.local.manifest.dtype, 'fp32');
    const dir = join(svc.layout.root, 'test-org', 'tiny-chat');
    assert.deepEqual(await readFile(join(dir, ONNX)), await readFile(join(repoDir, ONNX)));
    assert.deepEqual((await readdir(dir, { recursive: true })).sort(), [
      'config.json',
      'generation_config.json',
      'onnx',
      ONNX,
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    assert.equal(pulled.local.manifest.files.find((f) => f.path === ONNX)?.sha256, onnxSha);
    assert.deepEqual(await readdir(join(svc.layout.root, '.partial', 'blobs')), []);

    const listed = (await listModels(svc.catalog, svc.registry, svc.layout)).find((m) => m.name === 'tiny-chat:test')!;
    assert.equal(listed.local, true);
    assert.ok(listed.modified_at instanceof Date);
    assert.equal(listed.digest, pulled.local.digest);
    assert.ok(listed.size > ONNX_SIZE);
    const other = (await listModels(svc.catalog, svc.registry, svc.layout)).find((m) => m.name === 'qwen3:0.6b')!;
    assert.equal(other.local, false);
    assert.equal(other.modified_at, undefined);
  });

  it('a second pull of the same model joins the download in flight: every file is fetched once', async () => {
    const svc = await service();
    hub.slow(REPO, ONNX, 5, 16 * 1024);
    const a = await svc.pull('tiny-chat:test');
    const b = await svc.pull('TINY-CHAT');
    assert.equal(b.joined, true);
    const [ea, eb] = await Promise.all([collect(a.progress()), collect(b.progress())]);
    assert.equal(ea.at(-1)?.status, 'success');
    assert.equal(eb.at(-1)?.status, 'success');
    await Promise.all([a.done, b.done]);
    for (const f of ['config.json', 'tokenizer.json', ONNX]) assert.equal(hub.count(REPO, f), 1, f);
    assert.equal(hub.requests.filter((r) => r.path.startsWith('/api/models/')).length, 1);
  });

  it('a digest mismatch fails with 502 digest_mismatch and leaves nothing behind', async () => {
    const svc = await service();
    hub.corrupt(REPO, ONNX);
    const handle = await svc.pull('tiny-chat');
    await rejectsWith(handle.done, 502, 'digest_mismatch');
    await assert.rejects(collect(handle.progress()), (e: ServiceError) => e.reason === 'digest_mismatch');
    await assertNothingLeft(svc);
    assert.equal((await listModels(svc.catalog, svc.registry, svc.layout)).find((m) => m.name === 'tiny-chat:test')?.local, false);
  });

  it('an interrupted download resumes with a Range request and completes verified', async () => {
    const svc = await service();
    hub.cutAfter(REPO, ONNX, 100_000);
    const pulled = await (await svc.pull('tiny-chat')).done;
    const reqs = hub.fileRequests(REPO, ONNX);
    assert.equal(reqs.length, 2);
    assert.equal(reqs[0].range, undefined);
    const from = Number(/^bytes=(\d+)-$/.exec(reqs[1].range ?? '')?.[1]);
    assert.ok(from > 0 && from <= 100_000, `resumed from ${reqs[1].range}`);
    assert.equal(reqs[1].status, 206);
    assert.equal(pulled.local.manifest.files.find((f) => f.path === ONNX)?.sha256, sha256(await readFile(join(repoDir, ONNX))));
  });

  it('a transfer that goes silent is abandoned after the idle timeout and resumed', async () => {
    const svc = await service({ idleTimeoutMs: 150 });
    hub.stallAfter(REPO, ONNX, 64 * 1024);
    const pulled = await (await svc.pull('tiny-chat')).done;
    const reqs = hub.fileRequests(REPO, ONNX);
    assert.equal(reqs.length, 2);
    assert.match(reqs[1].range ?? '', /^bytes=[1-9][0-9]*-$/);
    assert.equal(pulled.local.manifest.files.find((f) => f.path === ONNX)?.sha256, sha256(await readFile(join(repoDir, ONNX))));
  });

  it('a partial file left by a failed pull is resumed by the next server start', async () => {
    const modelsDir = await tempDir('models');
    const first = await service({ modelsDir, retries: 0 });
    hub.cutAfter(REPO, ONNX, 150_000);
    await rejectsWith((await first.pull('tiny-chat')).done, 503, 'hub_unavailable');
    const partials = (await readdir(join(modelsDir, '.partial', 'blobs'))).filter((f) => f.endsWith('.part'));
    assert.equal(partials.length, 1);
    const kept = (await stat(join(modelsDir, '.partial', 'blobs', partials[0]))).size;
    assert.ok(kept > 0);
    assert.equal(await exists(join(modelsDir, 'test-org')), false, 'nothing visible after the failure');

    const second = await service({ modelsDir });
    await (await second.pull('tiny-chat')).done;
    const reqs = hub.fileRequests(REPO, ONNX);
    assert.deepEqual(reqs.map((r) => [r.range, r.status]), [[`bytes=${kept}-`, 206]]);
    assert.equal(hub.count(REPO, 'config.json'), 0, 'files verified before the failure are not fetched again');
    assert.deepEqual(await readFile(join(modelsDir, 'test-org', 'tiny-chat', ONNX)), await readFile(join(repoDir, ONNX)));
  });

  it('restarts from zero when the server ignores Range', async () => {
    const modelsDir = await tempDir('models');
    const first = await service({ modelsDir, retries: 0 });
    hub.cutAfter(REPO, ONNX, 100_000);
    await assert.rejects((await first.pull('tiny-chat')).done);
    const second = await service({ modelsDir });
    hub.ignoreRange(REPO, ONNX);
    const pulled = await (await second.pull('tiny-chat')).done;
    assert.equal(hub.fileRequests(REPO, ONNX)[0].status, 200);
    assert.equal(pulled.local.manifest.files.find((f) => f.path === ONNX)?.sha256, sha256(await readFile(join(repoDir, ONNX))));
  });

  it('a subscriber that stops reading does not stop the download', async () => {
    const svc = await service();
    hub.slow(REPO, ONNX, 5, 8 * 1024);
    const handle = await svc.pull('tiny-chat');
    const it = handle.progress();
    await it.next();
    await it.next();
    await it.return!(); // the client went away
    handle.progress(); // another never reads at all
    const pulled = await handle.done;
    assert.equal(pulled.local.manifest.files.length, 5);
    assert.ok(await exists(join(svc.layout.root, 'test-org', 'tiny-chat', ONNX)));
    assert.equal((await it.next()).done, true);
  });

  it('refuses hub hosts outside the egress policy (400) and redirects to them (403 egress_denied)', async () => {
    const svc = await service();
    await rejectsWith(svc.pull('example.com/test-org/tiny-chat'), 400, 'invalid_argument');
    assert.equal(hub.requests.length, 0);

    hub.redirect(REPO, ONNX, `${hub.url.replace('127.0.0.1', 'localhost')}/${REPO}/resolve/main/${ONNX}`);
    await rejectsWith((await svc.pull('tiny-chat')).done, 403, 'egress_denied');
    assert.equal(hub.count(REPO, ONNX), 1, 'the disallowed host was never contacted');
  });

  it('follows redirects within the policy', async () => {
    const svc = await service({ allowedHosts: ['hf.co', 'localhost'] });
    hub.redirect(REPO, 'config.json', `${hub.url.replace('127.0.0.1', 'localhost')}/${REPO}/resolve/main/tokenizer.json`);
    // The redirect serves other bytes: the digest check must catch it.
    await rejectsWith((await svc.pull('tiny-chat')).done, 502, 'digest_mismatch');
    assert.equal(hub.count(REPO, 'config.json'), 1);
    assert.equal(hub.count(REPO, 'tokenizer.json'), 1);
  });

  it('unknown model: 404 not_found', async () => {
    const svc = await service();
    await assert.rejects(
      svc.pull('no-such-model'),
      (e: ServiceError) => e.status === 404 && e.reason === 'not_found' && e.message === "model 'no-such-model' not found",
    );
    await rejectsWith((await svc.pull('hf.co/test-org/missing')).done, 404, 'not_found');
    await rejectsWith(svc.resolve('hf.co/test-org/tiny-chat'), 404, 'not_found');
  });

  it('a read-only model directory answers 503 model_store_read_only with Retry-After', async (t) => {
    const modelsDir = await tempDir('models');
    const { execFileSync } = await import('node:child_process');
    const { chmod } = await import('node:fs/promises');
    // Root ignores permission bits; the immutable attribute stops it too.
    const root = process.getuid?.() === 0;
    if (root) {
      try {
        execFileSync('chattr', ['+i', modelsDir]);
      } catch (err) {
        assert.fail(`chattr is needed to make a directory read-only for root: ${err}`);
      }
    } else await chmod(modelsDir, 0o555);
    t.after(() => (root ? execFileSync('chattr', ['-i', modelsDir]) : chmod(modelsDir, 0o755)));
    const svc = await service({ modelsDir });
    await assert.rejects(
      svc.pull('hf.co/test-org/tiny-chat'),
      (e: ServiceError) => e.status === 503 && e.reason === 'model_store_read_only' && e.headers?.['Retry-After'] === '5',
    );
    assert.equal(hub.requests.length, 0);
  });

  it('hub references import as custom models marked Unverified', async () => {
    const svc = await service();
    const h = await svc.pull('hf.co/test-org/tiny-chat:Q4');
    assert.equal(h.name, 'hf.co/test-org/tiny-chat:Q4');
    const events = await collect(h.progress());
    assert.equal(events.at(-1)?.status, 'success');
    const pulled = await h.done;
    assert.equal(pulled.unverified, true);
    assert.equal(pulled.spec.dtype, 'q4');
    assert.deepEqual(pulled.spec.capabilities, ['completion', 'tools']);
    assert.equal(hub.count(REPO, ONNX), 0, 'only the q4 graph is fetched');

    const e = await (await svc.pull('huggingface.co/test-org/tiny-embed')).done;
    assert.equal(e.spec.kind, 'embedding');
    assert.equal(e.spec.dtype, 'fp32', 'without a quant the repository decides');

    const listed = await listModels(svc.catalog, svc.registry, svc.layout);
    const custom = listed.filter((m) => m.source === 'custom').map((m) => [m.name, m.unverified, m.local]);
    assert.deepEqual(custom.sort(), [['hf.co/test-org/tiny-chat:Q4', true, true], [
      'huggingface.co/test-org/tiny-embed:latest',
      true,
      true,
    ]]);
    assert.equal((await svc.resolve('HF.CO/test-org/tiny-chat:q4')).unverified, true);
  });

  it('ensure() downloads on first use and then serves the local copy without the hub', async () => {
    const svc = await service();
    const first = await svc.ensure('tiny-chat');
    const count = hub.requests.length;
    assert.ok(count > 0);
    const again = await svc.ensure('tiny-chat:test');
    assert.equal(hub.requests.length, count);
    assert.equal(again.local.digest, first.local.digest);
  });

  it('a repeated pull downloads nothing that is unchanged', async () => {
    const svc = await service();
    await (await svc.pull('tiny-chat')).done;
    hub.requests.length = 0;
    const events = await collect((await svc.pull('tiny-chat')).progress());
    assert.equal(events.at(-1)?.status, 'success');
    assert.deepEqual(hub.requests.map((r) => r.path), [`/api/models/${REPO}`]);
  });
});
