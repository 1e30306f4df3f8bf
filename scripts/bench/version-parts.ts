/**
 * Where svc's time per GET /api/version goes beyond the minimal Hono app, in-process (no socket): the app's
 * `fetch` called with a fresh Request, the minimal app of scripts/bench/minimal-hono.ts against svc's router and
 * its every-request middleware added one at a time, then the whole app, quiet and with its access log on.
 * Rounds alternate the variants; after 3 warm-up rounds each variant's difference to the minimal app and to
 * the variant before it is taken within every round, and the medians of those are printed. A diagnostic for
 * scripts/bench/version.mjs, whose wrk rounds on a noisy machine swing more than one middleware costs:
 * in-process the variants' differences hold still. Not the server path (the runtime builds its Request
 * otherwise, and Deno's headers are set after the response there), so it prints no table for BENCHMARKS.md.
 * Telling on Bun and Deno; on Node a `new Request` (undici) costs ~30 µs and its spread hides the steps.
 * Run (the access lines go to stderr):
 *   bun scripts/bench/version-parts.ts 2>/dev/null
 *   deno run -A scripts/bench/version-parts.ts 2>/dev/null
 *   node --import tsx scripts/bench/version-parts.ts 2>/dev/null
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { createApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { areaTicketAuth } from '../../src/http/area-ticket.ts';
import { auth } from '../../src/http/auth.ts';
import { bodyLimit } from '../../src/http/body-limit.ts';
import type { AppEnv } from '../../src/http/context.ts';
import { cors } from '../../src/http/cors.ts';
import { OneHandlerRouter } from '../../src/http/one-handler-router.ts';
import { requestMeta } from '../../src/http/request-meta.ts';
import { createLogger } from '../../src/log.ts';
import { versionRoutes } from '../../src/routes/ollama/version.ts';
import { openServices } from '../../src/server.ts';
import { minimalApp } from './minimal-hono.ts';

const N = 5_000;
const ROUNDS = 60;
const dataDir = mkdtempSync(join(tmpdir(), 'svc-version-parts-'));
const config = { ...loadConfig(new Map(), {}), logLevel: 'warn' as const, port: 0, dataDir };
const log = createLogger('warn');
const s = await openServices(config, log);

const bare = minimalApp();

const STEPS = ['meta', 'cors', 'ticket', 'auth', 'limit'] as const;
/** svc's router and version route with its first `n` every-request steps, in svc's order (src/app.ts). */
function upTo(n: number): Hono<AppEnv> {
  const app = new Hono<AppEnv>({ router: new OneHandlerRouter(new RegExpRouter(), (err, c) => c.text(err.message, 500)) });
  const steps = {
    meta: () => requestMeta('bench', log),
    cors: () => cors(config.corsOrigins),
    ticket: () => areaTicketAuth(s.adminConsole.tickets),
    auth: () => auth(s.keys, true),
    limit: () => bodyLimit(config.maxUploadBytes),
  };
  for (const step of STEPS.slice(0, n)) app.use('*', steps[step]());
  app.route('/api', versionRoutes());
  return app;
}

const variants: [string, { fetch: (r: Request) => Response | Promise<Response> }][] = [
  ['minimal Hono', bare],
  ["svc's router, no middleware", upTo(0)],
  ...STEPS.map((step, i) => [`+ ${step}`, upTo(i + 1)] as [string, Hono<AppEnv>]),
  ['svc (createApp)', createApp(s)],
  // the access log on (info, as svc runs by default): its lines go to stderr, batched as in the server
  ['svc, access log on', createApp({ ...s, log: createLogger('info') })],
];
const times = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, app] of variants) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      const r = app.fetch(new Request('http://127.0.0.1:8080/api/version', { headers: { 'user-agent': 'wrk' } }));
      if (r instanceof Promise) await r;
    }
    const ns = ((performance.now() - t0) / N) * 1e6;
    if (round >= 3) times.set(name, [...(times.get(name) ?? []), ns]);
    await new Promise((r) => setTimeout(r, 0)); // lets the runtime release the round's requests
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
// Differences are taken within a round and then their median: this machine's speed drifts between rounds
// (the same loop by up to 1.7x from one second to the next), which shifts every variant of a round alike.
const names = [...times.keys()];
const within = (name: string, ref: string) => median(times.get(name)!.map((t, r) => t - times.get(ref)![r]!));
names.forEach((name, i) => {
  const m = median(times.get(name)!);
  const vsMinimal = within(name, names[0]!);
  const step = i ? within(name, names[i - 1]!) : 0;
  console.log(
    `${name.padEnd(28)} ${m.toFixed(0).padStart(6)} ns  vs minimal ${vsMinimal.toFixed(0).padStart(6)}  step ${
      step.toFixed(0).padStart(6)
    }`,
  );
});
await s.close();
rmSync(dataDir, { recursive: true, force: true });
