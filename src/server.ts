/**
 * Starts a whole server (store, node tag, services, app, listener) from a config.
 * main.ts uses it, and so do tests that need a real listening server.
 */
import { mkdir } from 'node:fs/promises';
import { createApp, type AppDeps } from './app.ts';
import { dbUrl, type Config } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { serve, type RunningServer } from './runtime/serve.ts';
import { KeyService } from './services/keys/api-keys.ts';
import { openStore, type OpenedStore } from './store/db.ts';
import { loadNodeTag } from './store/node-tag.ts';

export interface Services {
  config: Config;
  store: OpenedStore;
  nodeTag: string;
  keys: KeyService;
  log: Logger;
  close(): Promise<void>;
}

/** Opens everything the app needs, without listening. */
export async function openServices(config: Config, log: Logger = createLogger(config.logLevel)): Promise<Services> {
  await mkdir(config.dataDir, { recursive: true });
  const nodeTag = await loadNodeTag(config.dataDir);
  const store = await openStore(dbUrl(config), config.databaseAuthToken);
  const keys = new KeyService(store.db, config.requireKeys);
  return { config, store, nodeTag, keys, log, close: () => store.close() };
}

export function appOf(s: Services, extra?: Pick<AppDeps, 'extraRoutes'>) {
  return createApp({ config: s.config, db: s.store.db, nodeTag: s.nodeTag, keys: s.keys, log: s.log, ...extra });
}

export interface StartedServer extends Services {
  server: RunningServer;
  url: string;
  stop(): Promise<void>;
}

export async function startServer(config: Config, extra?: Pick<AppDeps, 'extraRoutes'>): Promise<StartedServer> {
  const s = await openServices(config);
  const app = appOf(s, extra);
  const server = await serve(app.fetch, { port: config.port, hostname: config.host });
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    ...s, server, url: `http://${host}:${server.port}`,
    async stop() {
      await server.close(); // finishes in-flight requests first
      await s.close();
    },
  };
}
