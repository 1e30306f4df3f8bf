// Requests per second of GET /api/version on Node, Deno and Bun: svc against a minimal Hono app with one
// route doing the same required work (one header read, one header set) on the same runtime, measured in the same run with wrk (Debian package `wrk`).
// Both sides run the same way on each runtime: on Node both are bundled by esbuild with the same options and
// run with node; on Deno and Bun both run from source. Rounds alternate bare, bare with features, svc, svc quiet;
// reported: each kind's median req/s and the medians of the per-round ratios.
// Usage: [SVC_BENCH_PIN=1] node scripts/bench/version.mjs [seconds] [rounds] [runtimes]   → prints a table and writes it into BENCHMARKS.md.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { writeSection } from './write-benchmarks.mjs';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
// optional: the runtimes to measure, comma separated (default: all three); a partial run writes no table
const only = process.argv[4]?.split(',');
const START_LOAD = loadavg()[0].toFixed(1);
spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
// The bare peer bundled exactly as scripts/build.mjs bundles svc.
await build({
  entryPoints: ['scripts/bench/bare-hono.ts'],
  outfile: 'dist/bench-bare-hono.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
});
const bin = (n) => join('node_modules', '.bin', n);
// SVC_BENCH_PIN=1, a diagnostic: each server (with every thread it starts) on the last CPU and wrk on the others,
// with taskset. It keeps the scheduler from moving a server between CPUs that run at different speeds (as on a
// 2-vCPU VM here), though rounds still swing when the speeds themselves change. Off by default, as servers are
// run: pinned, a server's GC and JIT threads share its one CPU, so its figures are not comparable with unpinned ones.
const cpus = availableParallelism();
const pinned = process.env.SVC_BENCH_PIN === '1' && cpus >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const onCpus = (list, [cmd, args]) => (pinned ? ['taskset', ['-c', list, cmd, ...args]] : [cmd, args]);
const SERVER_CPU = String(cpus - 1);
const WRK_CPUS = cpus > 2 ? `0-${cpus - 2}` : '0';
const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
const svcArgs = ['--port', '0', '--data-dir', dataDir];
const targets = {
  node: {
    svc: [process.execPath, ['dist/main.mjs', ...svcArgs]],
    bare: [process.execPath, ['dist/bench-bare-hono.mjs', '0']],
    features: [process.execPath, ['dist/bench-bare-hono.mjs', '0', 'features']],
  },
  deno: {
    svc: [bin('deno'), ['run', '-A', 'src/main.ts', ...svcArgs]],
    bare: [bin('deno'), ['run', '-A', 'scripts/bench/bare-hono.ts', '0']],
    features: [bin('deno'), ['run', '-A', 'scripts/bench/bare-hono.ts', '0', 'features']],
  },
  bun: {
    svc: [bin('bun'), ['src/main.ts', ...svcArgs]],
    bare: [bin('bun'), ['scripts/bench/bare-hono.ts', '0']],
    features: [bin('bun'), ['scripts/bench/bare-hono.ts', '0', 'features']],
  },
};

// The server logs to a file, as it would in production: wrk runs synchronously below, and an unread pipe
// would stall a server that writes an access-log line per request.
async function start(command, env = {}) {
  const [cmd, args] = onCpus(SERVER_CPU, command);
  const logFile = join(dataDir, `server-${Date.now()}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', fd], env: { ...process.env, ...env } });
  closeSync(fd);
  let exited = null;
  child.on('exit', (c) => {
    exited = c;
  });
  for (let i = 0; i < 600; i++) {
    const m = /listening on (http:\/\/\S+)/.exec(readFileSync(logFile, 'utf8'));
    if (m) return { child, url: m[1] };
    if (exited !== null) throw new Error(`exited ${exited}: ${readFileSync(logFile, 'utf8')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('no start within 60 s');
}

function wrk(url) {
  const [cmd, pre] = onCpus(WRK_CPUS, ['wrk', []]);
  spawnSync(cmd, [...pre, '-t1', '-c16', '-d1s', url]); // warm-up (JIT)
  const r = spawnSync(cmd, [...pre, '-t1', '-c16', `-d${seconds}s`, url], { encoding: 'utf8' });
  const m = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout);
  if (!m) throw new Error(`wrk failed: ${r.stdout}${r.stderr}`);
  return Number(m[1]);
}

const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length ? v[Math.floor(v.length / 2)] : NaN;
};
const rows = [];
for (const [rt, t] of Object.entries(targets)) {
  if (only && !only.includes(rt)) continue;
  const runs = { bare: [], features: [], svc: [], svcQuiet: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [kind, cmd] of [['bare', t.bare], ['features', t.features], ['svc', t.svc], ['svcQuiet', t.svc]]) {
      const s = await start(cmd, kind === 'svcQuiet' ? { SVC_LOG_LEVEL: 'warn' } : {}).catch((e) => ({ error: e }));
      if (s.error) {
        console.error(`${rt} ${kind}: ${s.error.message}`);
        runs[kind].push(NaN); // keeps the rounds aligned
        continue;
      }
      try {
        runs[kind].push(wrk(`${s.url}/api/version`));
      } finally {
        s.child.kill('SIGTERM');
      }
    }
  }
  console.error(rt, JSON.stringify(runs));
  // Ratios and differences are taken within each round, then their medians: the machine's speed may change
  // between rounds (on a 2-vCPU VM by up to 1.7x), which moves every kind of one round alike.
  const ratio = (kind) => median(runs[kind].map((v, i) => v / runs.bare[i]));
  // µs per request that a kind adds over the minimal app, from the two throughputs
  const extra = (kind) => median(runs[kind].map((v, i) => 1e6 / v - 1e6 / runs.bare[i]));
  rows.push({
    rt,
    bare: median(runs.bare),
    features: median(runs.features),
    svc: median(runs.svc),
    svcQuiet: median(runs.svcQuiet),
    ratio: { features: ratio('features'), svc: ratio('svc'), svcQuiet: ratio('svcQuiet') },
    extra: { svc: extra('svc'), svcQuiet: extra('svcQuiet') },
    spread: runs,
  });
}

const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const table = [
  `Measured with \`node scripts/bench/version.mjs ${seconds} ${rounds}\`: wrk -t1 -c16 -d${seconds}s on loopback, median of ${rounds} alternating rounds (bare, bare with svc's features, svc, svc quiet), each after a 1 s warm-up. On Node both servers are bundled by esbuild with the same options and run with node; on Deno and Bun both run from source. Load average at start: ${START_LOAD} (${cpus} CPUs); ${
    pinned
      ? `each server (all its threads) pinned to CPU ${SERVER_CPU} and wrk to CPU ${WRK_CPUS} with taskset`
      : 'unpinned: the load generator shares the cores'
  }; servers log to a file.`,
  '',
  "| runtime | minimal Hono (header read + set) req/s | svc req/s (access log on) | ratio | svc req/s (log level warn) | ratio | svc extra µs/request (log on; warn) | minimal Hono with svc's per-request features (log on) req/s | ratio |",
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) =>
    `| ${r.rt} | ${fmt(r.bare)} | ${fmt(r.svc)} | ${fmt(r.ratio.svc, 2)} | ${fmt(r.svcQuiet)} | ${fmt(r.ratio.svcQuiet, 2)} | ${
      fmt(r.extra.svc, 1)
    }; ${fmt(r.extra.svcQuiet, 1)} | ${fmt(r.features)} | ${fmt(r.ratio.features, 2)} |`
  ),
  '',
  'req/s are the medians of each kind; every ratio, and the extra µs (10⁶/svc − 10⁶/bare), is taken within each round',
  "and then its median over the rounds (wrk's own work per request is the same for both and mostly cancels out).",
  '',
  'Every round (req/s), to show the spread on this machine:',
  '',
  ...rows.map((r) =>
    `- ${r.rt}: bare ${r.spread.bare.map((n) => fmt(n)).join(', ')}; bare with features ${
      r.spread.features.map((n) => fmt(n)).join(', ')
    }; svc ${r.spread.svc.map((n) => fmt(n)).join(', ')}; svc quiet ${r.spread.svcQuiet.map((n) => fmt(n)).join(', ')}`
  ),
  '',
  'Goal: svc within 10% of bare Hono (ratio ≥ 0.90).',
  '',
  "The last two columns are the minimal app with what svc adds to every request beyond the required work, with svc's own",
  'code and run as svc runs it (scripts/bench/bare-hono.ts `features`): the `X-Request-Id` header and the access line',
  "(src/http/request-meta.ts), CORS's `Vary: Origin` (src/http/cors.ts), its handlers as one. What svc costs beyond",
  'them is its other middleware (console ticket, key check, upload limit), its route table and its larger process.',
  '',
  'Both sides do the required work: every svc response carries `X-Svc-Node` and every request has its `Authorization`',
  'header read (an unknown or revoked token is always 401); the minimal Hono app (scripts/bench/bare-hono.ts) reads',
  '`Authorization` and sets `X-Svc-Node` too. svc also does what it does on every request: a request id (`X-Request-Id`),',
  'CORS (`Vary: Origin`), the console ticket and key checks, the upload limit and, with the access log on, one log line.',
  'The handlers a request matches (those steps, then the route) run as one handler (src/http/one-handler-router.ts):',
  'Hono calls a lone handler directly, and a request answered synchronously gets its Response back synchronously',
  "(on Node, @hono/node-server's fast path); a step that only passes on adds no promise,",
  'and every-request headers are set the way src/runtime/http-tuning.ts finds cheapest on the runtime: on Node on the',
  'response object @hono/node-server writes (no undici `Headers` per request), on Bun prepared on the context, on Deno on',
  'the finished Response; on Node, `Origin` and `X-Svc-Csrf` are read from the header object Node parsed.',
  "svc's route table is compiled by Hono's RegExpRouter alone (src/app.ts): a static route beside a `:param` route had",
  'made the default SmartRouter fall back to the slower TrieRouter for every request. Access-log lines are written as',
  'bytes straight into a batch (src/access-line.ts; one formatted timestamp per millisecond), written out every 50 ms or',
  '64 KB (src/log.ts); request ids take their last two base-36 digits from a table (src/http/request-meta.ts).',
].join('\n');
console.log(table);
// a partial or pinned run is a diagnostic: it prints its table and writes none
if (!only && !pinned) writeSection('GET /api/version throughput', table);
// the servers' data and logs: the access log alone is hundreds of megabytes after a full run
rmSync(dataDir, { recursive: true, force: true });
