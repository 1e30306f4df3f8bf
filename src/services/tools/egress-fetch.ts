/**
 * fetch through the server tools' egress policy: every hop (the URL and each redirect) must name an
 * allowed host, redirects are followed by hand so none escapes the check, and bodies are capped.
 */
import { EgressPolicy } from '../models/egress.ts';
import { ServiceError } from '../errors.ts';

const MAX_REDIRECTS = 5;

export class ToolEgress {
  readonly policy: EgressPolicy;
  constructor(allowedHosts: readonly string[], private readonly fetchImpl: typeof fetch = fetch) {
    this.policy = new EgressPolicy(allowedHosts);
  }

  check(url: URL, what: string): void {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ServiceError(400, 'invalid_request', `${what}: only http and https URLs can be fetched`);
    }
    if (!this.policy.allows(url.host)) {
      throw new ServiceError(
        403,
        'egress_denied',
        `${what}: host '${url.host}' is not allowed by the server tools' egress policy (setting tool-allowed-hosts: ${
          this.policy.allowedHosts.join(', ') || 'none'
        })`,
      );
    }
  }

  /** A fetch whose every hop passes the policy (for the MCP client transport too). */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    const base: RequestInit = input instanceof Request
      ? { method: input.method, headers: input.headers, body: input.body, signal: input.signal }
      : {};
    for (let hop = 0;; hop++) {
      this.check(url, 'fetch');
      const res = await this.fetchImpl(url, { ...base, ...init, redirect: 'manual' });
      const loc = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !loc) return res;
      if (hop >= MAX_REDIRECTS) throw new ServiceError(502, 'too_many_redirects', `more than ${MAX_REDIRECTS} redirects from ${url.host}`);
      await res.body?.cancel();
      url = new URL(loc, url);
    }
  };

  /** GET a URL as text (at most maxBytes; longer bodies are cut and say so). */
  async fetchText(
    raw: string,
    maxBytes: number,
    signal?: AbortSignal,
  ): Promise<{ url: string; status: number; content_type: string; text: string; truncated: boolean }> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ServiceError(400, 'invalid_request', `url: "${raw}" is not an absolute URL`);
    }
    const res = await this.fetch(url, { signal, headers: { accept: 'text/html, text/plain, application/json, */*;q=0.5' } });
    const reader = res.body?.getReader();
    const parts: Uint8Array[] = [];
    let size = 0;
    let truncated = false;
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      size += value.length;
      if (size > maxBytes) {
        truncated = true;
        await reader.cancel();
        break;
      }
    }
    const all = new Uint8Array(Math.min(size, maxBytes));
    let at = 0;
    for (const p of parts) {
      const take = Math.min(p.length, all.length - at);
      all.set(p.subarray(0, take), at);
      at += take;
      if (at >= all.length) break;
    }
    return {
      url: url.href,
      status: res.status,
      content_type: res.headers.get('content-type') ?? '',
      text: new TextDecoder().decode(all),
      truncated,
    };
  }
}
