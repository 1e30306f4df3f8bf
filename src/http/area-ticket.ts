/**
 * Area-ticket authentication of the admin console. The ticket rides in an HttpOnly cookie; a request is
 * authenticated by it only when it also carries the ticket's CSRF token in `X-Svc-Csrf` (a header a
 * cross-site page cannot set), and a state-changing request must come from the same origin. A request with
 * an API key (Authorization or x-api-key) is left to the key check. See docs/admin-console.md.
 */
import type { Context, MiddlewareHandler, Next } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { AreaTickets, IssuedTicket } from '../services/admin/area-tickets.ts';
import { ServiceError } from '../services/errors.ts';
import type { AppEnv } from './context.ts';
import { joinedHeader } from '../runtime/http-tuning.ts';

export const TICKET_COOKIE = 'svc-area-ticket';
export const CSRF_COOKIE = 'svc-csrf';
export const CSRF_HEADER = 'x-svc-csrf';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);
const forbidden = (message: string) => new ServiceError(403, 'csrf_check_failed', message);

export const isTls = (c: Context) => new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';

/** Same-origin check from Origin (or Sec-Fetch-Site), for state-changing requests. */
function sameOrigin(c: Context): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site && site !== 'same-origin' && site !== 'none') return false;
  const origin = c.req.header('origin');
  if (!origin) return true; // non-browser callers send none; the CSRF header still binds the request to the ticket
  try {
    return new URL(origin).host === (c.req.header('host') ?? new URL(c.req.url).host);
  } catch {
    return false;
  }
}

export function areaTicketAuth(tickets: AreaTickets): MiddlewareHandler<AppEnv> {
  // not async: most requests carry no CSRF header and pass straight on
  return (c, next) => {
    // the cookie alone authenticates nothing; the header is read first as most requests lack it
    const csrf = joinedHeader(c, CSRF_HEADER);
    return csrf ? ticketed(c, next, csrf) : next();
  };

  async function ticketed(c: Context<AppEnv>, next: Next, csrf: string) {
    const ticket = getCookie(c, TICKET_COOKIE);
    if (!ticket || c.req.header('authorization') || c.req.header('x-api-key')) return next();
    const session = await tickets.session(ticket);
    if (!session) return next();
    if (csrf !== session.csrfToken) throw forbidden('the X-Svc-Csrf header does not match the area ticket');
    if (!SAFE.has(c.req.method) && !sameOrigin(c)) {
      throw forbidden("a state-changing console request must come from the console's own origin");
    }
    c.set('owner', session.owner);
    c.set('areaTicket', session);
    return next();
  }
}

/** Sets the ticket and CSRF cookies: a session cookie, or Max-Age of the ticket's validity when persisted. */
export function setTicketCookies(c: Context, issued: IssuedTicket, validitySeconds: number): void {
  const base = { path: '/', sameSite: 'Strict' as const, secure: isTls(c), ...(issued.persist ? { maxAge: validitySeconds } : {}) };
  setCookie(c, TICKET_COOKIE, issued.ticket, { ...base, httpOnly: true });
  // readable by the console's script, which echoes it in X-Svc-Csrf (double submit)
  setCookie(c, CSRF_COOKIE, issued.csrf_token, base);
}

export function clearTicketCookies(c: Context): string | undefined {
  const ticket = getCookie(c, TICKET_COOKIE);
  const secure = isTls(c);
  deleteCookie(c, TICKET_COOKIE, { path: '/', httpOnly: true, sameSite: 'Strict', secure });
  deleteCookie(c, CSRF_COOKIE, { path: '/', sameSite: 'Strict', secure });
  return ticket;
}
