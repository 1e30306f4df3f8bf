/**
 * Debian's nginx running the shipped deploy/nginx.conf, rendered to loopback: the node addresses
 * (svc-1:8090 …) become 127.0.0.1 ports, `listen 8080` a free loopback port, and pid, logs and temp
 * files go to a temp directory (started with -p/-c/-e, so neither /run nor /var/log is touched).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

export interface RunningNginx {
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
  errors(): Promise<string>;
}

/** The shipped config with node N (1-based, svc-N:8090) at nodePorts[N-1] and the listener on `port`. */
export async function renderNginxConf(nodePorts: number[], port: number, dir: string, source = 'deploy/nginx.conf'): Promise<string> {
  let conf = await readFile(source, 'utf8');
  conf = conf.replace(/svc-(\d+):8090/g, (_, n: string) => {
    const p = nodePorts[Number(n) - 1];
    if (p === undefined) throw new Error(`deploy/nginx.conf names svc-${n} but only ${nodePorts.length} node ports were given`);
    return `127.0.0.1:${p}`;
  });
  conf = conf.replace(/listen 8080;/, `listen 127.0.0.1:${port};`)
    .replace(/^pid .*;$/m, `pid ${join(dir, 'nginx.pid')};`)
    .replace(/^error_log \S+/m, `error_log ${join(dir, 'error.log')}`)
    .replace(/access_log \S+;/, `access_log ${join(dir, 'access.log')};`)
    .replace(
      /^http \{$/m,
      ['http {', ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `    ${t}_temp_path ${join(dir, 'tmp', t)};`)].join(
        '\n',
      ),
    );
  return conf;
}

export async function startNginx(nodePorts: number[]): Promise<RunningNginx> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-nginx-'));
  // As root the workers run as `nobody`: they must be able to write the temp files.
  await mkdir(join(dir, 'tmp'), { recursive: true });
  await chmod(dir, 0o755);
  await chmod(join(dir, 'tmp'), 0o777);
  const port = await freePort();
  await writeFile(join(dir, 'nginx.conf'), await renderNginxConf(nodePorts, port, dir));
  const child: ChildProcess = spawn(
    'nginx',
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;'],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0;; i++) {
    const up = await fetch(`${url}/api/version`).then(() => true, () => false);
    if (up) break;
    if (child.exitCode !== null || i > 100) {
      throw new Error(`nginx did not start: ${await readFile(join(dir, 'error.log'), 'utf8').catch(() => '')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    port,
    dir,
    errors: () => readFile(join(dir, 'error.log'), 'utf8').catch(() => ''),
    async stop() {
      child.kill('SIGQUIT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
