/** Test helpers: a throwaway data directory, a config, the app in-process or listening on loopback. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AppOptions, createApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { openServices, type Services, type StartedServer, startServer } from '../../src/server.ts';

export async function tempDir(prefix = 'svc-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig(new Map(), {}), logLevel: 'warn', port: 0, ...overrides };
}

/**
 * `SVC_TEST_DB=postgres`: test servers that name no database get a new database on one throw-away
 * PostgreSQL server per test process (test/support/postgres.ts), so a suite runs on PostgreSQL unchanged.
 */
let testPostgres: Promise<import('./postgres.ts').TestPostgres> | undefined;
async function storeOverrides(o: Partial<Config>): Promise<Partial<Config>> {
  if (o.databaseUrl || process.env.SVC_TEST_DB !== 'postgres') return {};
  if (!testPostgres) {
    testPostgres = import('./postgres.ts').then(async (m) => {
      const server = await m.startPostgres();
      process.once('exit', () => server.stopNow());
      return server;
    });
  }
  return { databaseUrl: await (await testPostgres).newDatabase() };
}

export interface InProcess {
  s: Services;
  dataDir: string;
  request(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/** The app served in-process through app.request (no socket). */
export async function inProcess(overrides: Partial<Config> = {}, opts?: AppOptions): Promise<InProcess> {
  const dataDir = overrides.dataDir ?? (await tempDir());
  const s = await openServices(testConfig({ dataDir, ...(await storeOverrides(overrides)), ...overrides }), createLogger('silent'));
  const app = createApp(s, opts);
  return {
    s,
    dataDir,
    request: async (path, init) => app.request(path, init),
    close: async () => {
      await s.close();
      if (!overrides.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A real server listening on 127.0.0.1 with a free port. */
export async function listening(overrides: Partial<Config> = {}, opts?: AppOptions): Promise<StartedServer & { dataDir: string }> {
  const dataDir = overrides.dataDir ?? (await tempDir());
  const started = await startServer(testConfig({ dataDir, ...(await storeOverrides(overrides)), ...overrides }), opts);
  started.log.level = 'silent';
  return Object.assign(started, { dataDir });
}

export const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
