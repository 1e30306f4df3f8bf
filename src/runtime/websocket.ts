/**
 * WebSocket upgrades on every runtime. A route accepts an upgrade by calling `acceptWebSocket(req, session)`
 * and returning its placeholder answer; the runtime's serve adapter (serve.ts) sees the accepted request
 * after the app ran (auth included) and performs the runtime's own upgrade: Deno.upgradeWebSocket,
 * Bun's server.upgrade, or the `ws` package on Node's `upgrade` event.
 */

/** The connection as a session sees it. */
export interface WsPeer {
  send(text: string): void;
  close(code?: number, reason?: string): void;
}

export interface WsSession {
  open?(peer: WsPeer): void;
  message(peer: WsPeer, text: string): void;
  close?(): void;
}

const accepted = new WeakMap<Request, WsSession>();

export const isWebSocketUpgrade = (req: Request) => (req.headers.get('upgrade') ?? '').toLowerCase() === 'websocket';

/** Marks the request as accepted for an upgrade; the returned answer is replaced by the runtime's 101. */
export function acceptWebSocket(req: Request, session: WsSession): Response {
  accepted.set(req, session);
  return new Response(null, { status: 200, headers: { 'x-svc-websocket': 'accepted' } });
}

/** The session of an accepted upgrade request (taken: each is upgraded once). */
export function takeAcceptedSession(req: Request): WsSession | undefined {
  const s = accepted.get(req);
  if (s) accepted.delete(req); // most requests are no upgrade: one lookup for them
  return s;
}

const decoder = new TextDecoder();
/** Message data of any runtime → text. */
export function messageText(data: unknown): string {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return decoder.decode(data);
  if (ArrayBuffer.isView(data)) return decoder.decode(data as Uint8Array);
  if (Array.isArray(data)) return data.map(messageText).join('');
  return String(data);
}
