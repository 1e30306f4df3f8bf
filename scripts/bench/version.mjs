// Requests per second of GET /api/version on Node, Deno and Bun: svc against a bare Hono app with one
// route on the same runtime, measured in the same run with wrk (Debian package `wrk`).
// Usage: node scripts/bench/version.mjs [seconds]   → prints a table and writes it into BENCHMARKS.md.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSection } from './write-benchmarks.mjs';

const seconds = Number(process.argv[2] ?? 5);
spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
const bin = (n) => join('node_modules', '.bin', n);
const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
const svcArgs = ['--port', '0', '--data-dir', dataDir];
const targets = {
  node: { svc: [process.execPath, ['dist/main.mjs', ...svcArgs]], bare: [bin('tsx'), ['scripts/bench/bare-hono.ts', '0']] },
  deno: { svc: [bin('deno'), ['run', '-A', 'src/main.ts', ...svcArgs]], bare: [bin('deno'), ['run', '-A', 'scripts/bench/bare-hono.ts', '0']] },
  bun: { svc: [bin('bun'), ['src/main.ts', ...svcArgs]], bare: [bin('bun'), ['scripts/bench/bare-hono.ts', '0']] },
};

function start([cmd, args], env = {}) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (c) => reject(new Error(`exited ${c}: ${err}`)));
  });
}

function wrk(url) {
  spawnSync('wrk', ['-t1', '-c16', '-d1s', url]); // warm-up (JIT)
  const r = spawnSync('wrk', ['-t1', '-c16', `-d${seconds}s`, url], { encoding: 'utf8' });
  const m = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout);
  if (!m) throw new Error(`wrk failed: ${r.stdout}${r.stderr}`);
  return Number(m[1]);
}

const rows = [];
for (const [rt, t] of Object.entries(targets)) {
  const result = {};
  for (const [kind, cmd] of [['bare', t.bare], ['svc', t.svc], ['svcQuiet', t.svc]]) {
    const s = await start(cmd, kind === 'svcQuiet' ? { SVC_LOG_LEVEL: 'warn' } : {}).catch((e) => ({ error: e }));
    if (s.error) { result[kind] = NaN; console.error(`${rt} ${kind}: ${s.error.message}`); continue; }
    if (kind === 'svcQuiet') s.child.stderr.resume();
    try {
      result[kind] = wrk(`${s.url}/api/version`);
    } finally {
      s.child.kill('SIGTERM');
    }
  }
  rows.push({ rt, ...result });
}

const fmt = (n) => (Number.isFinite(n) ? n.toFixed(0) : 'n/a');
const table = [
  `Measured with \`node scripts/bench/version.mjs ${seconds}\` (wrk -t1 -c16 -d${seconds}s, loopback, 2-core machine; the load generator shares the cores).`,
  '',
  '| runtime | bare Hono req/s | svc req/s (access log on) | ratio | svc req/s (log level warn) | ratio |',
  '| --- | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) => `| ${r.rt} | ${fmt(r.bare)} | ${fmt(r.svc)} | ${(r.svc / r.bare).toFixed(2)} | ${fmt(r.svcQuiet)} | ${(r.svcQuiet / r.bare).toFixed(2)} |`),
  '',
  'Goal: svc within 10% of bare Hono (ratio ≥ 0.90).',
].join('\n');
console.log(table);
writeSection('GET /api/version throughput', table);
