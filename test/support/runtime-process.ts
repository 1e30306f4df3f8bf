/** Starts the real server as a child process (any runtime's start command) and reads its URL from the log. */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

export interface Running {
  child: ChildProcess;
  url: string;
  runtime: string;
  stop(): Promise<void>;
}

export function start(cmd: string, args: string[], cwd = ROOT): Promise<Running> {
  // Its own process group: npm/bun/deno launchers sit between us and the server.
  const child = spawn(cmd, args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, SVC_LOG_LEVEL: 'info' },
  });
  return new Promise((resolvePromise, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no start within 60 s: ${err}`)), 60_000);
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
