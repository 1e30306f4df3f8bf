import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { ConfigError, helpText, loadConfig, parseArgs } from '../../src/config.ts';

const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 30_000,
  });

test('defaults: loopback, a data directory, port and limits', () => {
  const c = loadConfig(new Map(), {});
  assert.equal(c.host, '127.0.0.1');
  assert.match(c.dataDir, /\.svc$/);
  assert.equal(c.maxUploadBytes, 100 * 1024 * 1024);
  assert.equal(c.maxJobsPerOwner, 100);
  assert.equal(c.idleDeviceMemoryReleaseSeconds, 300);
});

test('flags win over SVC_* variables, which win over defaults', () => {
  const { flags } = parseArgs(['--', '--port', '9001', '--data-dir=/tmp/x', '--require-keys']);
  const c = loadConfig(flags, { SVC_PORT: '9000', SVC_HOST: '0.0.0.0', SVC_MAX_JOBS_PER_OWNER: '7' });
  assert.equal(c.port, 9001);
  assert.equal(c.host, '0.0.0.0');
  assert.equal(c.dataDir, '/tmp/x');
  assert.equal(c.requireKeys, true);
  assert.equal(c.maxJobsPerOwner, 7);
});

test('an invalid value fails naming the setting, its flag and its variable', () => {
  assert.throws(
    () => loadConfig(new Map([['port', 'abc']]), {}),
    (e: unknown) => e instanceof ConfigError && /port/.test(e.message) && /--port/.test(e.message) && /SVC_PORT/.test(e.message),
  );
  assert.throws(() => loadConfig(new Map(), { SVC_SATURATION_POLICY: 'Drop' }), /saturationPolicy.*SVC_SATURATION_POLICY/);
  assert.throws(() => loadConfig(new Map([['no-such-thing', '1']]), {}), /unknown option --no-such-thing/);
});

test('the server refuses to start on invalid config, naming the setting', () => {
  const r = run(['--port', '70000']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /invalid setting port \(--port \/ SVC_PORT\)/);
  const e = run([], { SVC_REQUIRE_KEYS: 'perhaps' });
  assert.equal(e.status, 2);
  assert.match(e.stderr, /requireKeys/);
});

test('--help lists every setting with its default', () => {
  const text = helpText();
  for (const flag of ['--port', '--host', '--data-dir', '--max-upload-bytes', '--require-keys', '--backend']) {
    assert.ok(text.includes(flag), flag);
  }
  const r = run(['--help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout, /--port <int>\n\s+SVC_PORT .*default: 8090/);
});
