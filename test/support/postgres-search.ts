/**
 * A throw-away PostgreSQL server for tests: `initdb` on a temporary directory, `pg_ctl start` on a free
 * loopback port (no Unix socket), stopped and removed by stop(). PostgreSQL refuses to run as root, so
 * under root the server runs as the `postgres` system user (Debian's package creates it).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPostgres {
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
}

export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0]!, 'bin') : null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL is not installed (Debian package postgresql; .ci/run installs it)');
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) => {
    const r = asRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' })
      : spawnSync(join(bin, cmd), args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  run('initdb', ['-D', data, '-U', 'svc', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  run('pg_ctl', [
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-t',
    '60',
    '-o',
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off -c shared_buffers=64MB`,
    'start',
  ]);
  const url = `postgres://svc@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    dir,
    stop: async () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch { /* already stopped */ }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function pgCtl(args: string[]): void {
  const bin = postgresBinDir()!;
  const r = process.getuid?.() === 0
    ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, 'pg_ctl'), ...args], { encoding: 'utf8' })
    : spawnSync(join(bin, 'pg_ctl'), args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pg_ctl failed: ${r.stderr || r.stdout}`);
}

/** Stops the server without removing it (tests of an unreachable cluster). */
export function stopPostgresOnly(pg: TestPostgres): void {
  pgCtl(['-D', join(pg.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
}

/** Starts a stopped server again on its port, with its data. */
export function restartPostgres(pg: TestPostgres): void {
  pgCtl([
    '-D',
    join(pg.dir, 'data'),
    '-l',
    join(pg.dir, 'log'),
    '-w',
    '-t',
    '60',
    '-o',
    `-p ${pg.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off -c shared_buffers=64MB`,
    'start',
  ]);
}
