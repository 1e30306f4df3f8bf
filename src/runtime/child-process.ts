/**
 * External programs (ffmpeg, ffprobe) run as child processes. `node:child_process` is served by Node,
 * Bun and Deno alike, so this is the one module that touches it.
 */
import { spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';

export interface ToolResult {
  code: number;
  stdout: Uint8Array;
  stderr: string;
}

export interface ToolOptions {
  signal?: AbortSignal;
  /** Kill the program after this many milliseconds (it then ends with code -1). */
  timeoutMs?: number;
  /** Most stdout bytes kept; more kills the program (the caller's guard against runaway output). */
  maxStdoutBytes?: number;
}

/** Absolute path of an executable found on PATH (or the given path when it is executable), or null. */
export async function findExecutable(name: string): Promise<string | null> {
  if (!name) return null;
  const candidates = isAbsolute(name) || name.includes('/')
    ? [name]
    : (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      await access(c, constants.X_OK);
      return c;
    } catch { /* next */ }
  }
  return null;
}

/** Runs a program to completion, collecting stdout (bytes) and stderr (text, last 64 KiB). */
export function runTool(cmd: string, args: string[], opts: ToolOptions = {}): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    opts.signal?.throwIfAborted();
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Uint8Array[] = [];
    let outBytes = 0, err = '', killedFor: string | undefined;
    const kill = (why: string) => {
      killedFor ??= why;
      child.kill('SIGKILL');
    };
    const timer = opts.timeoutMs ? setTimeout(() => kill('timeout'), opts.timeoutMs) : undefined;
    const onAbort = () => kill('aborted');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (b: Uint8Array) => {
      outBytes += b.byteLength;
      if (opts.maxStdoutBytes !== undefined && outBytes > opts.maxStdoutBytes) kill('output too large');
      else out.push(b);
    });
    child.stderr.on('data', (b: Uint8Array) => {
      err = (err + new TextDecoder().decode(b)).slice(-65536);
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (killedFor === 'aborted') return reject(opts.signal?.reason ?? new Error('aborted'));
      const stdout = new Uint8Array(outBytes > (opts.maxStdoutBytes ?? Infinity) ? 0 : outBytes);
      let o = 0;
      if (stdout.byteLength) {
        for (const b of out) {
          stdout.set(b, o);
          o += b.byteLength;
        }
      }
      resolve({ code: killedFor ? -1 : (code ?? -1), stdout, stderr: killedFor ? `${err}\n[${killedFor}]` : err });
    });
  });
}

export interface ToolStream {
  /** stdout, chunk by chunk, as the program writes it. */
  stdout: AsyncIterable<Uint8Array>;
  /** Resolves when the program has ended (after stdout is drained). */
  done: Promise<{ code: number; stderr: string }>;
  kill(): void;
}

/** Starts a program whose stdout is read as a stream (large outputs such as decoded PCM never sit whole in memory). */
export function streamTool(cmd: string, args: string[], opts: { signal?: AbortSignal } = {}): ToolStream {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (b: Uint8Array) => {
    err = (err + new TextDecoder().decode(b)).slice(-65536);
  });
  const kill = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  opts.signal?.addEventListener('abort', kill, { once: true });
  const done = new Promise<{ code: number; stderr: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      opts.signal?.removeEventListener('abort', kill);
      resolve({ code: code ?? -1, stderr: err });
    });
  });
  done.catch(() => {});
  return { stdout: child.stdout as AsyncIterable<Uint8Array>, done, kill };
}
