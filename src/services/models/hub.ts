/**
 * Client of the model hub's HTTP API (huggingface.co or a mirror/stand-in with the same routes):
 * `GET /api/models/<owner>/<repo>[/revision/<rev>]?blobs=true` for the file list with sizes and LFS
 * sha256, and `GET /<owner>/<repo>/resolve/<rev>/<path>` for the bytes. Redirects are followed by hand
 * so that every hop passes the egress policy.
 */
import { ServiceError } from '../errors.ts';
import { EgressPolicy } from './egress.ts';

/** One entry of `siblings` as the hub returns it with `blobs=true`. */
export interface HubSibling {
  rfilename: string;
  size?: number;
  /** Git blob id (sha1 of `blob <size>\0<bytes>`); present for every file. */
  blobId?: string;
  /** Present for LFS files: sha256 of the content, its size, and the pointer's size. */
  lfs?: { sha256: string; size: number; pointerSize?: number };
}

export interface HubModelInfo {
  id: string;
  /** Commit the listing describes; downloads pin to it so all files come from one revision. */
  sha?: string;
  pipeline_tag?: string;
  siblings: HubSibling[];
}

export interface HubClientOptions {
  /** Default `https://huggingface.co`. Its host is always reachable (the operator configured it). */
  baseUrl?: string;
  policy?: EgressPolicy;
  fetch?: typeof fetch;
  /** Sent as Authorization: Bearer, for gated repositories. */
  token?: string;
  /** How long to wait for response headers (per hop). Default 30 s. */
  headersTimeoutMs?: number;
}

const MAX_REDIRECTS = 5;

export class HubClient {
  readonly baseUrl: URL;
  readonly policy: EgressPolicy;
  readonly #fetch: typeof fetch;
  readonly #token?: string;
  readonly #headersTimeoutMs: number;

  constructor(opts: HubClientOptions = {}) {
    this.baseUrl = new URL(opts.baseUrl ?? 'https://huggingface.co');
    if (!this.baseUrl.pathname.endsWith('/')) this.baseUrl.pathname += '/';
    this.policy = new EgressPolicy(opts.policy?.allowedHosts, [this.baseUrl.host]);
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.#token = opts.token;
    this.#headersTimeoutMs = opts.headersTimeoutMs ?? 30_000;
  }

  async modelInfo(repo: string, revision?: string, signal?: AbortSignal): Promise<HubModelInfo> {
    const path = revision && revision !== 'main' ? `api/models/${repo}/revision/${encodeURIComponent(revision)}` : `api/models/${repo}`;
    const url = new URL(path, this.baseUrl);
    url.searchParams.set('blobs', 'true');
    const res = await this.request(url, { signal });
    if (res.status === 404 || res.status === 401 || res.status === 403) {
      // The hub answers 401 for private and for non-existent repositories alike.
      await res.body?.cancel();
      throw new ServiceError(404, 'not_found', `model repository '${repo}' not found on the hub`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw (res.status >= 500 ? upstream : badUpstream)(`the model hub answered ${res.status} for '${repo}'`);
    }
    let body: Partial<HubModelInfo>;
    try {
      body = (await res.json()) as Partial<HubModelInfo>;
    } catch (err) {
      if (signal?.aborted) throw err;
      throw badUpstream(`the model hub sent an unreadable file list for '${repo}'`, err);
    }
    if (!body || !Array.isArray(body.siblings)) throw badUpstream(`the model hub sent no file list for '${repo}'`);
    return { id: body.id ?? repo, sha: body.sha, pipeline_tag: body.pipeline_tag, siblings: body.siblings };
  }

  fileUrl(repo: string, revision: string, path: string): URL {
    const encoded = path.split('/').map(encodeURIComponent).join('/');
    return new URL(`${repo}/resolve/${encodeURIComponent(revision)}/${encoded}`, this.baseUrl);
  }

  /** GET a file, from byte `offset` on (Range); the caller checks 200 vs 206. */
  async getFile(url: URL, offset: number, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = {};
    if (offset > 0) headers.Range = `bytes=${offset}-`;
    return this.request(url, { headers, signal });
  }

  /** fetch with redirects followed by hand, each hop checked against the egress policy. */
  async request(url: URL, init: { headers?: Record<string, string>; signal?: AbortSignal }): Promise<Response> {
    let current = url;
    for (let hop = 0;; hop++) {
      this.policy.assertUrl(current);
      const headers = { ...init.headers };
      // Credentials go to the configured hub only, never to a CDN it redirects to.
      if (this.#token && current.host === this.baseUrl.host) headers.Authorization = `Bearer ${this.#token}`;
      // Own controller: a headers timeout must not cut a long body later; the caller's abort still reaches the body.
      const ctl = new AbortController();
      const onAbort = () => ctl.abort(init.signal!.reason);
      if (init.signal?.aborted) onAbort();
      init.signal?.addEventListener('abort', onAbort, { once: true });
      const timer = setTimeout(() => ctl.abort(new Error(`no answer within ${this.#headersTimeoutMs} ms`)), this.#headersTimeoutMs);
      let res: Response;
      try {
        res = await this.#fetch(current, { headers, signal: ctl.signal, redirect: 'manual' });
      } catch (err) {
        init.signal?.removeEventListener('abort', onAbort);
        if (init.signal?.aborted) throw err;
        throw upstream(`the model hub is unreachable (${(err as Error).message})`, err);
      } finally {
        clearTimeout(timer);
      }
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) return res;
      await res.body?.cancel();
      init.signal?.removeEventListener('abort', onAbort);
      if (hop >= MAX_REDIRECTS) throw badUpstream('the model hub redirected too many times');
      current = new URL(location, current);
    }
  }
}

/**
 * The hub cannot be reached or is failing (network error, 5xx, an interrupted transfer): an upstream outage,
 * not the client's fault and worth retrying: 503 hub_unavailable with Retry-After.
 */
export const upstream = (message: string, cause?: unknown) =>
  new ServiceError(503, 'hub_unavailable', message, { cause, headers: { 'Retry-After': '30' } });
/** The hub answered, but with something unusable (an unreadable listing, a redirect loop, an unexpected status): 502. */
export const badUpstream = (message: string, cause?: unknown) => new ServiceError(502, 'hub_bad_response', message, { cause });
