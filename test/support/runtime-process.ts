/**
 * The real server as a child process (any runtime's start command, its URL read from the log), and what
 * the runtime tests share: the README's start commands, the Node bundle build, a one-page PDF.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
/** A tool the npm install put in node_modules/.bin (deno, bun). */
export const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

/** The README's start commands, exactly: each must run the server on its own runtime. */
export const RUNTIMES: Record<string, (args: string[]) => [string, string[]]> = {
  node: (args) => ['npm', ['start', '--', ...args]],
  deno: (args) => [bin('deno'), ['task', 'start', '--', ...args]],
  bun: (args) => [bin('bun'), ['run', 'start', '--', ...args]],
};

/** How each runtime runs a TypeScript file from source (Node through tsx): the command before the file. */
export const SCRIPT_RUNNERS = {
  node: [process.execPath, '--import', 'tsx'],
  bun: [bin('bun')],
  deno: [bin('deno'), 'run', '-A'],
} as const;

/** Builds the Node bundle (dist/) that `npm start` runs. */
export function buildBundle(): void {
  const b = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
  assert.equal(b.status, 0, 'the Node bundle builds');
}

/** A one-page PDF, small enough to keep inline. */
export const ONE_PAGE_PDF = new TextEncoder().encode(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/MediaBox[0 0 200 200]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

export interface Running {
  child: ChildProcess;
  url: string;
  runtime: string;
  stop(): Promise<void>;
}

export function start(cmd: string, args: string[], cwd = ROOT, timeoutMs = 60_000): Promise<Running> {
  // Its own process group: npm/bun/deno launchers sit between us and the server.
  const child = spawn(cmd, args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, SVC_LOG_LEVEL: 'info' },
  });
  return new Promise((resolvePromise, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no start within ${timeoutMs / 1000} s: ${err}`)), timeoutMs);
    child.stderr!.on('data', (d) => {
      err += d;
      const m = /on \w+ \S+ \((\w+)\) node \w+ listening on (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolvePromise({
          child,
          url: m[2],
          runtime: m[1],
          stop: () =>
            new Promise((r) => {
              child.once('exit', () => r());
              process.kill(-child.pid!, 'SIGTERM');
            }),
        });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}: ${err}`));
    });
  });
}
