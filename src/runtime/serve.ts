/** Serves a fetch handler on the runtime's own HTTP server. */
import { runtimeName } from './env.ts';
import { messageText, takeAcceptedSession, type WsPeer, type WsSession } from './websocket.ts';

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
    // not async: an answer the app gave at once goes back at once, without a promise of its own
    const server = Deno.serve({ port, hostname, onListen: () => {} }, (req: Request, info: unknown) => {
      const res = fetch(req, info);
      return res instanceof Response ? answerDeno(req, res) : res.then((r) => answerDeno(req, r));
    });
    resolve({ port: server.addr.port, close: () => server.shutdown() });
  });
}

/** Deno: the app's answer, or the 101 of a WebSocket upgrade the app accepted. */
function answerDeno(req: Request, res: Response): Response {
  const session = takeAcceptedSession(req);
  if (!session) return res;
  const { socket, response } = (globalThis as Any).Deno.upgradeWebSocket(req);
  const peer: WsPeer = { send: (t) => socket.send(t), close: (c, r) => socket.close(c, r) };
  socket.onopen = () => session.open?.(peer);
  socket.onmessage = (e: { data: unknown }) => session.message(peer, messageText(e.data));
  socket.onclose = () => session.close?.();
  return response;
}

function serveBun(fetch: FetchHandler, { port, hostname }: ServeOptions): RunningServer {
  const Bun = (globalThis as Any).Bun;
  const server = Bun.serve({
    port,
    hostname,
    // Body limits are enforced by the app (413 in the family's envelope), not by Bun's 128 MB default.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    idleTimeout: 0, // long generations and uploads must not be cut by an idle timer
    // not async: an answer the app gave at once goes back at once, without a promise of its own
    fetch: (req: Request, srv: Any) => {
      const res = fetch(req, srv);
      return res instanceof Response ? answerBun(req, srv, res) : res.then((r) => answerBun(req, srv, r));
    },
    websocket: {
      open(ws: Any) {
        ws.data.peer = { send: (t: string) => ws.send(t), close: (c?: number, r?: string) => ws.close(c, r) } satisfies WsPeer;
        (ws.data.session as WsSession).open?.(ws.data.peer);
      },
      message: (ws: Any, msg: unknown) => (ws.data.session as WsSession).message(ws.data.peer, messageText(msg)),
      close: (ws: Any) => (ws.data.session as WsSession).close?.(),
    },
  });
  return { port: server.port, close: async () => void (await server.stop(false)) };
}

/** Bun: the app's answer, or none where the app accepted a WebSocket upgrade and Bun took the connection. */
function answerBun(req: Request, srv: Any, res: Response): Response | undefined {
  const session = takeAcceptedSession(req);
  return session && srv.upgrade(req, { data: { session } }) ? undefined : res;
}

async function serveNode(fetch: FetchHandler, { port, hostname }: ServeOptions): Promise<RunningServer> {
  const { serve: nodeServe } = await import('@hono/node-server');
  const sockets = new Set<Any>();
  return new Promise((resolve) => {
    const server = nodeServe({ fetch, port, hostname }, (info) => {
      resolve({
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            // Keep-alive sockets become idle when their request ends: close them as they do, not after 5 s.
            const sweep = setInterval(() => (server as Any).closeIdleConnections?.(), 100);
            server.close(() => {
              clearInterval(sweep);
              done();
            });
            (server as Any).closeIdleConnections?.();
            for (const ws of sockets) ws.terminate(); // WebSocket sessions end with the server
          }),
      });
    });
    (server as Any).requestTimeout = 0; // uploads and streams may take long
    (server as Any).on('upgrade', (req: Any, socket: Any, head: Uint8Array) => void nodeUpgrade(fetch, req, socket, head, sockets));
  });
}

let wsServer: Promise<Any> | undefined;

/** Node: an upgrade request runs through the app like any other; an accepted one is handed to `ws`. */
async function nodeUpgrade(fetch: FetchHandler, req: Any, socket: Any, head: Uint8Array, sockets: Set<Any>): Promise<void> {
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers as Record<string, string | string[]>)) {
      headers.set(k, Array.isArray(v) ? v.join(', ') : String(v));
    }
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, { method: req.method, headers });
    const res = await fetch(request);
    const session = takeAcceptedSession(request);
    if (!session) {
      const body = new Uint8Array(await res.arrayBuffer());
      const head = [
        `HTTP/1.1 ${res.status} ${res.statusText || 'Error'}`,
        ...[...res.headers].map(([k, v]) => `${k}: ${v}`),
        `content-length: ${body.byteLength}`,
        'connection: close',
        '',
        '',
      ].join('\r\n');
      socket.end(Buffer.concat([Buffer.from(head), body]));
      return;
    }
    wsServer ??= import('ws').then((m) => new m.WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 }));
    const wss = await wsServer;
    wss.handleUpgrade(req, socket, head, (ws: Any) => {
      sockets.add(ws);
      const peer: WsPeer = { send: (t) => ws.send(t), close: (c, r) => ws.close(c, r) };
      ws.on('message', (data: unknown) => session.message(peer, messageText(data)));
      ws.on('close', () => {
        sockets.delete(ws);
        session.close?.();
      });
      session.open?.(peer);
    });
  } catch {
    socket.destroy();
  }
}
