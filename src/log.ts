/** Level-aware logging to stderr (stdout stays free for CLI output). */
import process from 'node:process';
import { writeSync } from 'node:fs';
import { accessLineBytes, writeAccessLine } from './access-line.ts';
export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const encoder = new TextEncoder();
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export interface Logger {
  level: Level;
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string, err?: unknown): void;
  /**
   * A request's access-log line at info level (src/access-line.ts): its method, URL (the line shows the path
   * as sent), status, time taken in tenths of a millisecond, owner and request id. Lines are batched (below).
   */
  access(method: string, url: string, status: number, tenths: number, owner: string, rid: string): void;
}

/** Every logger's batch, written when the process exits (one listener for all of them). */
const pendingAtExit = new Set<() => void>();
process.on('exit', () => pendingAtExit.forEach((flush) => flush()));

// Formatting a date costs more than the rest of an access line: a busy server reuses it within a millisecond.
let stampMs = -1;
let stamp = '';
/** The time as ISO text's bytes (24 of them), rewritten when the millisecond has changed. */
const stampBytes = new Uint8Array(24);
function timestamp(): string {
  const now = Date.now();
  if (now !== stampMs) {
    stampMs = now;
    stamp = new Date(now).toISOString();
    encoder.encodeInto(stamp, stampBytes);
  }
  return stamp;
}

/**
 * Bytes to stderr at once, written to its descriptor: as Node writes its own stderr to a file or a pipe on
 * Linux, and with no copy of the batch. Through `process.stderr.write` (by wrk, /api/version with a line
 * each, the two alternating) Deno took 0.16 µs a request more, Bun 0.09 µs more in a minimal app (within the
 * spread in svc). What the descriptor does not take (on an error) goes through the stream, as before.
 */
function writeErr(bytes: Uint8Array): void {
  let at = 0;
  try {
    while (at < bytes.length) at += writeSync(2, bytes.subarray(at));
  } catch {
    process.stderr.write(bytes.slice(at)); // a copy: the stream may hold it after write() returns
  }
}

export function createLogger(level: Level = 'info'): Logger {
  const at = (l: Level) => order[l] >= order[log.level];
  const write = (l: Level, msg: string) => {
    flush(); // keep the order of lines
    console.error(`${timestamp()} ${l.toUpperCase().padEnd(5)} ${msg}`);
  };
  // Access lines are written in batches: every 50 ms, at 64 KB, and at exit (as nginx's `buffer=`/`flush=`).
  // One write per request (or per event-loop turn) cost more than the rest of a small request: on Node a
  // write to a file or pipe on stderr is a synchronous system call. Each line is written into the batch
  // as it comes, so nothing of it outlives its request.
  const batch = new Uint8Array(131_072);
  let used = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!used) return;
    const bytes = batch.subarray(0, used);
    used = 0;
    writeErr(bytes);
  };
  const append = (method: string, url: string, status: number, tenths: number, owner: string, rid: string) => {
    const most = accessLineBytes(method, url, owner, rid);
    if (used + most > batch.length) flush();
    timestamp();
    if (most > batch.length) {
      // a line longer than the batch (a very long URL), written on its own
      const line = new Uint8Array(most);
      return writeErr(line.subarray(0, writeAccessLine(line, 0, stampBytes, method, url, status, tenths, owner, rid)));
    }
    used = writeAccessLine(batch, used, stampBytes, method, url, status, tenths, owner, rid);
    if (used >= 65_536) flush();
    else if (!timer) {
      timer = setTimeout(flush, 50);
      (timer as { unref?(): void }).unref?.(); // a pending log line never keeps the process alive
    }
  };
  pendingAtExit.add(flush);
  const log: Logger = {
    level,
    debug: (m) => at('debug') && write('debug', m),
    info: (m) => at('info') && write('info', m),
    access: (method, url, status, tenths, owner, rid) => at('info') && append(method, url, status, tenths, owner, rid),
    warn: (m) => at('warn') && write('warn', m),
    error: (m, err) => {
      if (!at('error')) return;
      write('error', err instanceof Error ? `${m}: ${err.stack ?? err.message}` : err ? `${m}: ${String(err)}` : m);
    },
  };
  return log;
}
