/**
 * Fleet load run: a small real task (POST /svc/v1/pii on a short text, answered inline) through Debian's
 * nginx running the shipped deploy/nginx.conf, against one node and against three nodes on one PostgreSQL.
 * Load from `wrk` (loopback only, bounded in time), requests spread over 12 API keys so the consistent
 * hash on Authorization has something to spread. The two sides are interleaved, ROUNDS times each, medians.
 *   node --import tsx scripts/bench/fleet.ts [seconds-per-run=8] [rounds=3] [connections=24]
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startPostgres } from '../../test/support/postgres.ts';
import { freePort } from '../../test/support/free-port.ts';
import { startNginx } from '../../test/support/nginx.ts';
import { tempDir } from '../../test/support/server.ts';
import { createKeyByCli } from '../../test/support/cli-key.ts';
import { writeSection } from './write-benchmarks.mjs';
import { machineNote, median } from './helpers.ts';

const SECONDS = Number(process.argv[2] ?? 8);
const ROUNDS = Number(process.argv[3] ?? 5);
const CONNECTIONS = Number(process.argv[4] ?? 24);
const KEYS = 12;
const TEXT = 'Contact Jane Roe at jane.roe@example.com or +1 415 555 0100; card 4111 1111 1111 1111.';

const pg = await startPostgres();
const databaseUrl = await pg.newDatabase('svc_bench');
const scratch = await tempDir('svc-bench-fleet-');
const children: ChildProcess[] = [];

function svc(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}

async function startNode(i: number): Promise<number> {
  const port = await freePort();
  const child = svc([
    'serve',
    '--database-url',
    databaseUrl,
    '--data-dir',
    join(scratch, `node${i}`),
    '--files-dir',
    join(scratch, 'files'),
    '--port',
    String(port),
    '--node-tag',
    `node0${i}`,
    '--require-keys',
    '--log-level',
    'warn',
  ]);
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d) => {
      err += d;
      if (/listening on/.test(err)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`node ${i} exited ${code}: ${err}`)));
  });
  return port;
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  requests: number;
}

const ms = (s: string) => {
  const m = /([\d.]+)(us|ms|s)/.exec(s)!;
  return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
};

function wrk(url: string, script: string): Run {
  const out = execFileSync('wrk', ['-t2', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--latency', '-s', script, `${url}/svc/v1/pii`], {
    encoding: 'utf8',
  });
  const non = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]),
    p50: ms(/\s50%\s+(\S+)/.exec(out)![1]!),
    p99: ms(/\s99%\s+(\S+)/.exec(out)![1]!),
    non2xx: non ? Number(non[1]) : 0,
    requests: Number(/(\d+) requests in/.exec(out)![1]),
  };
}

try {
  const tokens: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    tokens.push(createKeyByCli(`bench${k}`, databaseUrl, join(scratch, 'keys')));
  }
  const ports = [await startNode(1), await startNode(2), await startNode(3)];
  // One node: the shipped config with every server line pointing at node 1. Three: as shipped.
  const one = await startNginx([ports[0]!, ports[0]!, ports[0]!]);
  const three = await startNginx(ports);
  const script = join(scratch, 'keys.lua');
  await writeFile(
    script,
    `
local tokens = { ${tokens.map((t) => `"${t}"`).join(', ')} }
local i = 0
wrk.method = "POST"
wrk.body = '${JSON.stringify({ text: TEXT })}'
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i + 1
  return wrk.format(nil, nil, { ["Authorization"] = "Bearer " .. tokens[(i % #tokens) + 1] })
end
`,
  );
  // Check the work is real before measuring: the answer finds the e-mail address, through both.
  for (const n of [one, three]) {
    const r = await fetch(`${n.url}/svc/v1/pii`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[0]}` },
      body: JSON.stringify({ text: TEXT }),
    });
    const body = await r.json();
    if (r.status !== 200 || !JSON.stringify(body).includes('jane.roe@example.com')) {
      throw new Error(`pii through nginx: ${r.status} ${JSON.stringify(body)}`);
    }
  }
  wrk(three.url, script); // warm-up of every node (JIT), not counted
  const runs: Record<'one' | 'three', Run[]> = { one: [], three: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const side of (r % 2 ? ['three', 'one'] : ['one', 'three']) as ('one' | 'three')[]) {
      const x = wrk(side === 'one' ? one.url : three.url, script);
      runs[side].push(x);
      console.log(
        `round ${r + 1} ${side === 'one' ? '1 node ' : '3 nodes'}: ${x.rps.toFixed(0)} req/s, p50 ${x.p50.toFixed(1)} ms, p99 ${
          x.p99.toFixed(1)
        } ms, non-2xx ${x.non2xx} of ${x.requests}`,
      );
    }
  }
  await one.stop();
  await three.stop();
  const row = (label: string, xs: Run[]) =>
    `| ${label} | ${median(xs.map((x) => x.rps)).toFixed(0)} | ${median(xs.map((x) => x.p50)).toFixed(1)} | ${
      median(xs.map((x) => x.p99)).toFixed(1)
    } | ${xs.reduce((a, x) => a + x.non2xx, 0)} of ${xs.reduce((a, x) => a + x.requests, 0)} |`;
  const ratio = median(runs.three.map((x) => x.rps)) / median(runs.one.map((x) => x.rps));
  const table = [
    `Small task \`POST /svc/v1/pii\` (${TEXT.length} characters, answered inline) through ${
      spawnSync('nginx', ['-v'], { encoding: 'utf8' }).stderr.trim().replace('nginx version: ', '')
    }`,
    `with the shipped \`deploy/nginx.conf\` (rendered to loopback), nodes on one PostgreSQL (throw-away, Debian's),`,
    `\`wrk -t2 -c${CONNECTIONS} -d${SECONDS}s\` over ${KEYS} API keys; ${ROUNDS} interleaved rounds, medians. Machine: ${machineNote()};`,
    `wrk, nginx, PostgreSQL and every node on the same cores: on 2 cores the`,
    `point is that three nodes hold the load (no errors, p99 bounded), not that they scale.`,
    '',
    '| nodes | req/s | p50 ms | p99 ms | non-2xx |',
    '| --- | --- | --- | --- | --- |',
    row('1 (every upstream = node 1)', runs.one),
    row('3', runs.three),
    '',
    `3 nodes / 1 node throughput: ${
      ratio.toFixed(2)
    }×. Script: \`node --import tsx scripts/bench/fleet.ts ${SECONDS} ${ROUNDS} ${CONNECTIONS}\`.`,
  ].join('\n');
  console.log(table);
  writeSection('Fleet: 1 and 3 nodes behind nginx (scripts/bench/fleet.ts)', table);
} finally {
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
  await pg.stop();
  await rm(scratch, { recursive: true, force: true });
}
