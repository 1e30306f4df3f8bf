/**
 * The npm package as a user gets it: `npm pack` (its prepack builds the bundle), installed from the tarball
 * into an empty directory, then started with `npx svc`, `bunx --bun svc` and `deno run -A npm:svc`; each
 * must answer /api/version and say which runtime it is on. Also the packed CLI: `svc list` against it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bin, ONE_PAGE_PDF, ROOT, start } from '../support/runtime-process.ts';

let app: string;
let packDir: string;

before(async () => {
  packDir = await mkdtemp(join(tmpdir(), 'svc-pack-'));
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

// the installed app is over a gigabyte (onnxruntime, Deno's binary): not left for the rest of the run
after(() => Promise.all([app, packDir].map((d) => d && rm(d, { recursive: true, force: true }))));

describe('the packed npm package starts from an empty directory', () => {
  const cases: [string, string, (dir: string) => string[]][] = [
    ['npx svc', 'node', (d) => ['npx', 'svc', 'serve', '--port', '0', '--data-dir', d]],
    ['bunx --bun svc', 'bun', (d) => [bin('bun'), 'x', '--bun', 'svc', 'serve', '--port', '0', '--data-dir', d]],
    ['deno run -A npm:svc', 'deno', (d) => [bin('deno'), 'run', '-A', 'npm:svc', 'serve', '--port', '0', '--data-dir', d]],
  ];
  for (const [name, runtime, argv] of cases) {
    it(`${name} answers /api/version on ${runtime}`, async () => {
      const [cmd, ...args] = argv(await mkdtemp(join(tmpdir(), 'svc-pkg-data-')));
      const s = await start(cmd!, args, app, 90_000);
      try {
        assert.equal(s.runtime, runtime);
        const r = await fetch(`${s.url}/api/version`);
        assert.equal(r.status, 200);
        assert.match(((await r.json()) as { version: string }).version, /^\d{4}\.\d+\.\d+$/);
        // heavy work runs in the worker pool: its entry (dist/worker.mjs) must be in the package
        const info = await fetch(`${s.url}/svc/v1/pdf-info`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ input_format: 'Base64EncodedFile', file: Buffer.from(ONE_PAGE_PDF).toString('base64') }),
        });
        assert.equal(info.status, 200, await info.clone().text());
        assert.equal(((await info.json()) as { page_count: number }).page_count, 1);
        if (runtime === 'node') {
          const list = spawnSync('npx', ['svc', 'list', '--port', new URL(s.url).port, '--no-start'], { cwd: app, encoding: 'utf8' });
          assert.equal(list.status, 0, list.stderr);
          assert.match(list.stdout, /^NAME\s+ID\s+SIZE\s+MODIFIED/);
        }
      } finally {
        await s.stop();
      }
    });
  }
});
