/** Test helpers: a throwaway data directory, a config, the app in-process or listening on loopback. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp, type AppOptions } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { openServices, startServer, type Services, type StartedServer } from '../../src/server.ts';

export async function tempDir(prefix = 'svc-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig(new Map(), {}), logLevel: 'warn', port: 0, ...overrides };
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
  const s = await openServices(testConfig({ dataDir, ...overrides }), createLogger('silent'));
  const app = createApp(s, opts);
  return {
    s, dataDir,
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
  const started = await startServer(testConfig({ dataDir, ...overrides }), opts);
  started.log.level = 'silent';
  return Object.assign(started, { dataDir });
}

export const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
});
