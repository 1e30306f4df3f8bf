// Runs the test suite with Node's test runner (TypeScript through tsx).
//   node scripts/test.mjs              every test/**/*.test.ts
//   node scripts/test.mjs --runtimes   only the runtime suite (Deno, Bun, Node, compiled binary)
//   node scripts/test.mjs test/jobs    files under the given paths
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const tools = spawnSync(process.execPath, ['scripts/check-tools.mjs'], { stdio: 'inherit' });
if (tools.status !== 0) process.exit(1);
const roots = args.includes('--runtimes') ? ['test/runtimes'] : args.filter((a) => !a.startsWith('--'));
const walk = (
  p,
) => (statSync(p).isDirectory()
  ? readdirSync(p).sort().flatMap((n) => (n === 'fixtures' || n === 'support' ? [] : walk(join(p, n))))
  : p.endsWith('.test.ts')
  ? [p]
  : []);
const files = (roots.length ? roots : ['test']).flatMap(walk);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// Every temporary file of the run (servers' data directories, packed packages, rendered fixtures, and those of
// the tools the tests start) goes under one directory, removed when the run ends, whatever the outcome: runs
// must not fill the disk of the machine they share.
// Mode as /tmp's: tests start servers under other users (postgres, nginx's workers) with files in there.
const runTmp = mkdtempSync(join(tmpdir(), 'svc-test-run-'));
chmodSync(runTmp, 0o1777);
const child = spawn(process.execPath, [
  '--import',
  'tsx',
  '--test',
  '--test-reporter=spec',
  '--test-concurrency=1',
  '--test-force-exit',
  '--test-timeout=300000',
  ...files,
], {
  stdio: 'inherit',
  env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', TMPDIR: runTmp, TMP: runTmp, TEMP: runTmp },
  detached: true, // its own process group, so that an interruption reaches every test process it started
});
// An interrupted run (Ctrl-C, a CI timeout) stops all the tests and still cleans up, once the test processes,
// which get the signal together with the runner, have had a moment to end.
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    interrupted = true;
    process.kill(-child.pid, sig);
  });
}
child.on('exit', (code) => {
  setTimeout(() => {
    rmSync(runTmp, { recursive: true, force: true });
    process.exit(code ?? 1);
  }, interrupted ? 1000 : 0);
});
