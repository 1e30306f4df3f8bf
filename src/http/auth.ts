/**
 * API key authentication. A token is read from `Authorization: Bearer` (all families) or `x-api-key`
 * (native family and the Anthropic gateway, whose clients send it). Policy (docs/auth.md): keys are required once an active key exists or when the
 * server requires them; a token of ours (svc_...) that is unknown or revoked is always 401, never anonymous.
 * While keys are not required, foreign tokens (the "required but unused" placeholders OpenAI clients send)
 * are ignored, as a local Ollama does.
 */
import type { Context, MiddlewareHandler, Next } from 'hono';
import { ServiceError } from '../services/errors.ts';
import { type KeyService, LOCAL_OWNER, type Owner, TOKEN_PREFIX } from '../services/keys/api-keys.ts';
import type { AppEnv } from './context.ts';
import { familyOf } from './family.ts';

export const unauthorized = (message: string) =>
  new ServiceError(401, 'unauthorized', message, { headers: { 'WWW-Authenticate': 'Bearer realm="svc"' } });

/** Routes a liveness probe or a first-time visitor needs without a key. */
const isPublic = (method: string, path: string) =>
  path === '/health' || path === '/svc/v1/admin/area-ticket' || path === '/svc/v1/admin/logout' || path === '/api/version' ||
  ((method === 'GET' || method === 'HEAD') && !/^\/(v1|api|svc|mcp)(\/|$)/.test(path));

export function tokenOf(authorization: string | undefined, apiKeyHeader: string | undefined): string | null {
  if (authorization) {
    const m = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (m) return m[1].trim();
  }
  return apiKeyHeader?.trim() || null;
}

/** The anonymous owner off loopback: same data as the local owner, but never an admin. */
const REMOTE_ANONYMOUS: Owner = { ...LOCAL_OWNER, role: 'user' };

/** `anonymousAdmin`: whether a caller without a key may use admin routes (only on a loopback address). */
export function auth(keys: KeyService, anonymousAdmin = true): MiddlewareHandler<AppEnv> {
  const anonymous = anonymousAdmin ? LOCAL_OWNER : REMOTE_ANONYMOUS;
  // Not async: a public route without a token (a liveness probe) passes on without a promise of its own.
  return (c, next) => {
    if (c.get('areaTicket')) return next(); // signed in to the admin console (src/http/area-ticket.ts)
    const path = c.req.path;
    // the header is read only where it can matter (each header read costs on the hot path)
    const family = familyOf(path, path.startsWith('/v1/') ? c.req.header('anthropic-version') : undefined);
    const takesApiKeyHeader = family === 'svc' || family === 'anthropic';
    const apiKeyHeader = takesApiKeyHeader ? c.req.header('x-api-key') : undefined;
    const token = tokenOf(c.req.header('authorization'), apiKeyHeader);
    if (token || !isPublic(c.req.method, path)) return checked(c, next, token, takesApiKeyHeader);
    c.set('owner', anonymous);
    return next();
  };

  async function checked(c: Context<AppEnv>, next: Next, token: string | null, takesApiKeyHeader: boolean) {
    if (token) {
      const owner = await keys.verify(token);
      if (owner) {
        c.set('owner', owner);
        return next();
      }
      if (token.startsWith(TOKEN_PREFIX) || (await keys.keysRequired())) throw unauthorized('invalid or revoked API key');
    }
    if (!isPublic(c.req.method, c.req.path) && (await keys.keysRequired())) {
      throw unauthorized(
        takesApiKeyHeader
          ? 'an API key is required: send x-api-key: <token> or Authorization: Bearer <token>'
          : 'an API key is required: send Authorization: Bearer <token>',
      );
    }
    c.set('owner', anonymous);
    return next();
  }
}

export function requireAdmin(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.get('owner').role !== 'admin') throw new ServiceError(403, 'forbidden', 'this route needs an admin API key');
    return next();
  };
}
