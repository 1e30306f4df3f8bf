/**
 * The client side of the commands: finds the server the same `--host`/`--port` (`SVC_HOST`/`SVC_PORT`)
 * that `serve` binds to, presents `SVC_API_KEY`, and starts a server in the background when none answers,
 * as `ollama run` does.
 */
import type { Config } from '../config.ts';
import { selfCommand, spawnDetached } from '../runtime/process.ts';
import { mkdirSync } from 'node:fs';

/** A refusal or failure answered by the server: the status and its reason, as one line. */
export class ServerError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(reason && reason !== message ? `${reason}: ${message}` : message);
  }
}

/** The server could not be reached (and was not started). */
export class ConnectError extends Error {}

/** Reads the error out of any of the families' envelopes. */
export function errorOf(status: number, body: string): ServerError {
  try {
    const j = JSON.parse(body) as { error?: unknown; message?: string; detail?: string; type?: string };
    if (typeof j.error === 'string') return new ServerError(status, j.message ? j.error : '', j.message ?? j.detail ?? j.error);
    if (j.error && typeof j.error === 'object') {
      const e = j.error as { message?: string; code?: string; type?: string };
      return new ServerError(status, e.code ?? e.type ?? '', e.message ?? body);
    }
  } catch { /* not JSON */ }
  return new ServerError(status, '', body.trim() || `HTTP ${status}`);
}

export class SvcClient {
  readonly base: string;
  constructor(readonly config: Config, private readonly key: string | undefined) {
    // A server bound to every interface is reached on loopback.
    const host = ['0.0.0.0', '::', '[::]'].includes(config.host) ? '127.0.0.1' : config.host;
    this.base = `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${config.port}`;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.key ? { Authorization: `Bearer ${this.key}` } : {}), ...extra };
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(this.base + path, { ...init, headers: this.headers(init.headers as Record<string, string>) });
    } catch (e) {
      throw new ConnectError(`could not reach the server at ${this.base} (${(e as Error).message})`);
    }
    if (!res.ok) throw errorOf(res.status, await res.text());
    return res;
  }

  async json<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.fetch(path, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } }),
    });
    const text = await res.text();
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** Yields the objects of an NDJSON (or plain JSON) answer one by one. */
  async *ndjson<T = Record<string, unknown>>(path: string, body: unknown, signal?: AbortSignal): AsyncGenerator<T> {
    const res = await this.fetch(path, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' },
      signal,
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buf += value;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) yield parseLine<T>(line);
      }
      if (done) break;
    }
    if (buf.trim()) yield parseLine<T>(buf.trim());
  }

  async alive(): Promise<boolean> {
    try {
      const res = await fetch(`${this.base}/api/version`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    }
  }

  /** Answers when a server is up, starting one in the background first if none answers. */
  async ensureServer(opts: { start: boolean; onStart?: (logFile: string) => void }): Promise<void> {
    if (await this.alive()) return;
    if (!opts.start) throw new ConnectError(`no server answers at ${this.base}; start one with: svc serve`);
    mkdirSync(this.config.dataDir, { recursive: true });
    const logFile = `${this.config.dataDir}/serve.log`;
    const self = selfCommand();
    spawnDetached(self.cmd, [
      ...self.args,
      'serve',
      '--host',
      this.config.host,
      '--port',
      String(this.config.port),
      '--data-dir',
      this.config.dataDir,
    ], logFile);
    opts.onStart?.(logFile);
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (await this.alive()) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new ConnectError(`started a server in the background but it did not answer at ${this.base} within 60 s; see ${logFile}`);
  }
}

/** An in-band stream error (`{"error": …}` as a line) becomes a ServerError like an HTTP one. */
function parseLine<T>(line: string): T {
  const obj = JSON.parse(line) as { error?: unknown };
  if (obj.error !== undefined) throw errorOf(200, line);
  return obj as T;
}
