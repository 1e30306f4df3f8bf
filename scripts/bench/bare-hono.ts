// Serves the version benchmark's peer (scripts/bench/minimal-hono.ts) with the same runtime adapter as svc:
// `bare-hono.ts <port> [features]`; with `features` the access log is at SVC_LOG_LEVEL (default info).
// It shows how much of svc's extra time per request those features take by themselves.
import { createLogger, type Level } from '../../src/log.ts';
import { serve } from '../../src/runtime/serve.ts';
import { minimalApp } from './minimal-hono.ts';

const features = process.argv[3] === 'features';
const app = minimalApp(features ? createLogger((process.env.SVC_LOG_LEVEL ?? 'info') as Level) : undefined);
const s = await serve(app.fetch, { port: Number(process.argv[2] ?? 0), hostname: '127.0.0.1' });
console.error(`listening on http://127.0.0.1:${s.port}`);
