/**
 * CORS for browser clients (web UIs, extensions, desktop apps in a webview), as Ollama answers them: origins
 * on this machine and app-like schemes are allowed by default (`--cors-origins`). Preflights are answered
 * before the key check, since browsers never send credentials on them. No credentials are allowed
 * cross-origin: a page elsewhere must present an API key, never the console's cookie.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { cors as honoCors } from 'hono/cors';
import { joinedHeader, presetHeader, setHeadersAfterResponse } from '../runtime/http-tuning.ts';
import { afterNext } from './one-handler-router.ts';

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

const ALLOW_HEADERS = [
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
];
const EXPOSE_HEADERS = [
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
].join(',');

/**
 * Preflights (OPTIONS) are answered by Hono's CORS middleware. Other requests get their headers here, set
 * the way src/runtime/http-tuning.ts finds cheapest on the runtime: Hono's middleware appends `Vary` to
 * the finished response, which makes every answer (with or without an Origin) rebuild its Response, the
 * largest cost of a small request on Node and Bun.
 */
export function cors(allowed: readonly string[]): MiddlewareHandler {
  const preflight = honoCors({
    origin: (origin) => (origin && originAllowed(origin, allowed) ? origin : null),
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowHeaders: ALLOW_HEADERS,
    exposeHeaders: EXPOSE_HEADERS.split(','),
    maxAge: 600,
  });
  const finish = (c: Context, allow: string | null) => {
    const h = c.res.headers;
    if (allow && !h.has('Access-Control-Allow-Origin')) {
      h.set('Access-Control-Allow-Origin', allow);
      h.set('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    }
    if (setHeadersAfterResponse) h.append('Vary', 'Origin');
  };
  return (c, next) => {
    if (c.req.method === 'OPTIONS') return preflight(c, next);
    const origin = joinedHeader(c, 'origin');
    const allow = origin && originAllowed(origin, allowed) ? origin : null;
    if (setHeadersAfterResponse) return afterNext(next(), () => finish(c, allow));
    const everyAnswer = presetHeader(c, 'Vary', 'Origin');
    if (!allow) return next();
    presetHeader(c, 'Access-Control-Allow-Origin', allow);
    presetHeader(c, 'Access-Control-Expose-Headers', EXPOSE_HEADERS);
    // prepared on the context, a response not built through it (a raw Response) did not get them: a browser needs them
    return everyAnswer ? next() : afterNext(next(), () => finish(c, allow));
  };
}
