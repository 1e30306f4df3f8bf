/**
 * How to add headers to every response most cheaply, measured per runtime (scripts/bench/version.mjs and an
 * in-process loop): on Deno, setting them on the finished Response costs ~0.5 µs while preparing them on the
 * context costs ~5 µs; on Node, opening a finished Response's headers forces @hono/node-server to build the
 * full undici Response it otherwise avoids, and Bun is also faster with prepared headers.
 */
import { runtimeName } from './env.ts';

export const setHeadersAfterResponse = runtimeName === 'deno';
