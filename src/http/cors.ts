/**
 * CORS for browser clients (web UIs, extensions, desktop apps in a webview), as Ollama answers them: origins
 * on this machine and app-like schemes are allowed by default (`--cors-origins`). Preflights are answered
 * before the key check, since browsers never send credentials on them. No credentials are allowed
 * cross-origin: a page elsewhere must present an API key, never the console's cookie.
 */
import type { MiddlewareHandler } from 'hono';
import { cors as honoCors } from 'hono/cors';

/** Whether `origin` matches one of the allowed patterns (see the setting's help). */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  return allowed.some((a) => {
    if (a === '*') return true;
    const wild = /^([a-z][a-z0-9+.-]*):\/\/\*$/i.exec(a);
    if (wild) return url.protocol === `${wild[1]!.toLowerCase()}:`;
    let p: URL;
    try {
      p = new URL(a);
    } catch {
      return false;
    }
    return p.protocol === url.protocol && p.hostname === url.hostname && (p.port === '' || p.port === url.port);
  });
}

export function cors(allowed: readonly string[]): MiddlewareHandler {
  return honoCors({
    origin: (origin) => (origin && originAllowed(origin, allowed) ? origin : null),
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowHeaders: [
      'Authorization',
      'Content-Type',
      'X-Api-Key',
      'Anthropic-Version',
      'Anthropic-Beta',
      'OpenAI-Beta',
      'Prefer',
      'X-Stainless-Os',
      'X-Stainless-Lang',
      'X-Stainless-Package-Version',
      'X-Stainless-Runtime',
      'X-Stainless-Runtime-Version',
      'X-Stainless-Arch',
      'X-Stainless-Retry-Count',
      'X-Stainless-Timeout',
      'Anthropic-Dangerous-Direct-Browser-Access',
      'User-Agent',
    ],
    exposeHeaders: [
      'X-Svc-Node',
      'X-Request-Id',
      'Location',
      'Retry-After',
      'Content-Disposition',
      'X-Video-Duration-Seconds',
      'X-Video-Width',
      'X-Video-Height',
      'X-Video-Codec',
      'X-Video-Has-Audio',
      'X-Frame-Timestamp-Seconds',
      'X-Frame-Timestamp-Mode',
    ],
    maxAge: 600,
  });
}
