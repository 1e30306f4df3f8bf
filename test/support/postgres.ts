/**
 * A throw-away PostgreSQL server for tests: Debian's `postgresql` binaries, initdb + pg_ctl on a temp
 * directory and a free loopback port. PostgreSQL refuses to run as root, so as root it runs as the
 * `postgres` user (runuser) with a directory that user owns.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.ts';

export interface TestPostgres {
  port: number;
  /** URL of a new, empty database on this server. */
  newDatabase(name?: string): Promise<string>;
  stop(): Promise<void>;
  /** The same, synchronously (for a process 'exit' hook). */
  stopNow(): void;
}

/** The newest installed PostgreSQL's bin directory; throws (naming the package) when none is installed. */
export function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length) throw new Error('PostgreSQL is not installed: apt-get install -y postgresql (or run bash .ci/run)');
  return join(root, versions[0]!, 'bin');
}

const asRoot = process.getuid?.() === 0;

function run(bin: string, args: string[]): string {
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

let counter = 0;

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin();
  const dir = await mkdtemp(join(tmpdir(), 'svc-pg-'));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C']);
  const port = await freePort();
  const opts =
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  run(join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', 'start']);
  const admin = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    port,
    async newDatabase(name = `svc_test_${process.pid}_${++counter}`) {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      try {
        await c.query(`create database ${name}`);
      } finally {
        await c.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      try {
        run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
    stopNow() {
      try {
        run(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch { /* already stopped */ }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
