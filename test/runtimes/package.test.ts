/**
 * The npm package as a user gets it: `npm pack` (its prepack builds the bundle), installed from the tarball
 * into an empty directory, then started with `npx svc`, `bunx --bun svc` and `deno run -A npm:svc`; each
 * must answer /api/version and say which runtime it is on. Also the packed CLI: `svc list` against it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { before, describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
let app: string;

before(async () => {
  const packDir = await mkdtemp(join(tmpdir(), 'svc-pack-'));
  const pack = spawnSync('npm', ['pack', '--pack-destination', packDir], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(pack.status, 0, pack.stderr);
  const tarball = join(packDir, (await readdir(packDir)).find((f) => f.endsWith('.tgz'))!);
  app = await mkdtemp(join(tmpdir(), 'svc-app-'));
  await writeFile(
    join(app, 'package.json'),
    JSON.stringify({ name: 'empty-app', private: true, dependencies: { svc: `file:${tarball}` } }),
  );
  // The registry's packages come from npm's cache, which the project's own install filled.
  const install = spawnSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: app,
    encoding: 'utf8',
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
    timeout: 600_000,
  });
  assert.equal(install.status, 0, install.stderr);
});

function serve(cmd: string, args: string[]): Promise<{ url: string; runtime: string; stop(): void }> {
  const child = spawn(cmd, args, { cwd: app, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((ok, fail) => {
    let err = '';
    const timer = setTimeout(() => fail(new Error(`no start within 90 s: ${err}`)), 90_000);
    child.stderr!.on('data', (d) => {
      err += d;
      const m = /on \w+ \S+ \((\w+)\) node \w+ listening on (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        ok({ url: m[2]!, runtime: m[1]!, stop: () => process.kill(-child.pid!, 'SIGTERM') });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`exited ${code}: ${err}`));
    });
  });
}

describe('the packed npm package starts from an empty directory', () => {
  const cases: [string, string, (dir: string) => string[]][] = [
    ['npx svc', 'node', (d) => ['npx', 'svc', 'serve', '--port', '0', '--data-dir', d]],
    ['bunx --bun svc', 'bun', (d) => [bin('bun'), 'x', '--bun', 'svc', 'serve', '--port', '0', '--data-dir', d]],
    ['deno run -A npm:svc', 'deno', (d) => [bin('deno'), 'run', '-A', 'npm:svc', 'serve', '--port', '0', '--data-dir', d]],
  ];
  for (const [name, runtime, argv] of cases) {
    it(`${name} answers /api/version on ${runtime}`, async () => {
      const [cmd, ...args] = argv(await mkdtemp(join(tmpdir(), 'svc-pkg-data-')));
      const s = await serve(cmd!, args);
      try {
        assert.equal(s.runtime, runtime);
        const r = await fetch(`${s.url}/api/version`);
        assert.equal(r.status, 200);
        assert.match(((await r.json()) as { version: string }).version, /^\d{4}\.\d+\.\d+$/);
        // heavy work runs in the worker pool: its entry (dist/worker.mjs) must be in the package
        const pdf =
          '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/MediaBox[0 0 200 200]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n';
        const info = await fetch(`${s.url}/svc/v1/pdf-info`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ input_format: 'Base64EncodedFile', file: Buffer.from(pdf).toString('base64') }),
        });
        assert.equal(info.status, 200, await info.clone().text());
        assert.equal(((await info.json()) as { page_count: number }).page_count, 1);
        if (runtime === 'node') {
          const list = spawnSync('npx', ['svc', 'list', '--port', new URL(s.url).port, '--no-start'], { cwd: app, encoding: 'utf8' });
          assert.equal(list.status, 0, list.stderr);
          assert.match(list.stdout, /^NAME\s+ID\s+SIZE\s+MODIFIED/);
        }
      } finally {
        s.stop();
      }
    });
  }
});
