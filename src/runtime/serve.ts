/** Serves a fetch handler on the runtime's own HTTP server. */
import { runtimeName } from './env.ts';

export type FetchHandler = (req: Request, info?: unknown) => Response | Promise<Response>;

export interface RunningServer {
  port: number;
  /** Stops accepting connections and resolves when in-flight requests have finished. */
  close(): Promise<void>;
}

export interface ServeOptions {
  port: number;
  hostname: string;
}

export async function serve(fetch: FetchHandler, opts: ServeOptions): Promise<RunningServer> {
  if (runtimeName === 'deno') return serveDeno(fetch, opts);
  if (runtimeName === 'bun') return serveBun(fetch, opts);
  return serveNode(fetch, opts);
}

// deno-lint-ignore no-explicit-any
type Any = any;

function serveDeno(fetch: FetchHandler, { port, hostname }: ServeOptions): Promise<RunningServer> {
  const Deno = (globalThis as Any).Deno;
  return new Promise((resolve) => {
    const server = Deno.serve({ port, hostname, onListen: () => {} }, (req: Request, info: unknown) => fetch(req, info));
    resolve({ port: server.addr.port, close: () => server.shutdown() });
  });
}

function serveBun(fetch: FetchHandler, { port, hostname }: ServeOptions): RunningServer {
  const Bun = (globalThis as Any).Bun;
  const server = Bun.serve({
    port,
    hostname,
    // Body limits are enforced by the app (413 in the family's envelope), not by Bun's 128 MB default.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 0, // long generations and uploads must not be cut by an idle timer
    fetch: (req: Request, srv: unknown) => fetch(req, srv),
  });
  return { port: server.port, close: async () => void (await server.stop(false)) };
}

async function serveNode(fetch: FetchHandler, { port, hostname }: ServeOptions): Promise<RunningServer> {
  const { serve: nodeServe } = await import('@hono/node-server');
  return new Promise((resolve) => {
    const server = nodeServe({ fetch, port, hostname }, (info) => {
      resolve({
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            // Keep-alive sockets become idle when their request ends: close them as they do, not after 5 s.
            const sweep = setInterval(() => (server as Any).closeIdleConnections?.(), 100);
            server.close(() => { clearInterval(sweep); done(); });
            (server as Any).closeIdleConnections?.();
          }),
      });
    });
    (server as Any).requestTimeout = 0; // uploads and streams may take long
  });
}
