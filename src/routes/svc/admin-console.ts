/**
 * Admin console routes: sign-in with an area ticket, logout, the current session, two-factor enrollment,
 * the dashboard and the recent-errors log. Cookie and CSRF rules: docs/admin-console.md.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import { clearTicketCookies, setTicketCookies } from '../../http/area-ticket.ts';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody, validate } from '../../http/validate.ts';
import { clientAddress } from '../../runtime/client-address.ts';
import { TICKET_VALIDITY_MS } from '../../services/admin/area-tickets.ts';
import type { AdminConsole } from '../../services/admin/console.ts';
import { ServiceError } from '../../services/errors.ts';

const Code = v.pipe(v.string(), v.trim(), v.maxLength(64));
const SignIn = v.object({
  key: v.pipe(v.string(), v.trim(), v.minLength(1, 'key is required'), v.maxLength(512)),
  code: v.optional(Code),
  recovery_code: v.optional(Code),
});
const Persist = v.optional(v.picklist(['true', 'false', '1', '0', '']), 'false');
const SecondFactor = v.object({ code: v.optional(Code), recovery_code: v.optional(Code) });
const Confirm = v.object({ code: v.pipe(v.string(), v.trim(), v.regex(/^\d{6}$/, 'code must be 6 digits')) });

/** The key a second factor belongs to: the signed-in admin key, never the anonymous local owner. */
function keyIdOf(owner: { keyId: string | null }): string {
  if (!owner.keyId) {
    throw new ServiceError(
      400,
      'admin_key_required',
      'two-factor sign-in belongs to an admin API key: create one and sign in with it first',
    );
  }
  return owner.keyId;
}

/** Sign-in and logout: open to every caller (the key, and the second factor, are in the body). */
export function adminSignInRoutes(admin: AdminConsole) {
  const app = new Hono<AppEnv>();

  app.post('/area-ticket', jsonBody(SignIn), async (c) => {
    const persist = ['true', '1'].includes(validate(Persist, c.req.query('persist')));
    const body = c.req.valid('json');
    const issued = await admin.tickets.signIn({ ...body, persist, client: clientAddress(c.req.raw, c.env) ?? 'unknown' });
    setTicketCookies(c, issued, TICKET_VALIDITY_MS / 1000);
    c.header('Cache-Control', 'no-store');
    const { ticket: _t, ...rest } = issued; // the ticket itself stays in the HttpOnly cookie
    return c.json(rest);
  });

  app.post('/logout', async (c) => {
    const ticket = clearTicketCookies(c);
    if (ticket) await admin.tickets.logout(ticket);
    return c.json({ signed_out: true });
  });
  return app;
}

/** The console's own views: session, two-factor enrollment, dashboard, start-up settings, recent errors. */
export function adminConsoleRoutes(admin: AdminConsole) {
  const app = new Hono<AppEnv>();

  app.get('/session', async (c) => {
    const owner = c.get('owner');
    const ticket = c.get('areaTicket');
    return c.json({
      signed_in: true,
      via: ticket ? 'area_ticket' : owner.keyId ? 'api_key' : 'local_owner',
      key: owner.keyId ? { id: owner.keyId, name: owner.name } : null,
      expires_at: ticket ? new Date(ticket.expiresAt).toISOString() : null,
      persist: ticket?.persist ?? false,
      two_factor: owner.keyId ? await admin.twoFactor.status(owner.keyId) : null,
    });
  });

  app.get('/2fa', async (c) => c.json(await admin.twoFactor.status(keyIdOf(c.get('owner')))));
  app.post('/2fa/setup', async (c) => {
    const owner = c.get('owner');
    c.header('Cache-Control', 'no-store');
    return c.json(await admin.twoFactor.setup(keyIdOf(owner), owner.name));
  });
  app.post('/2fa/confirm', jsonBody(Confirm), async (c) => {
    const { code } = c.req.valid('json');
    c.header('Cache-Control', 'no-store');
    return c.json(await admin.twoFactor.confirm(keyIdOf(c.get('owner')), code));
  });
  app.post('/2fa/disable', jsonBody(SecondFactor), async (c) => {
    const keyId = keyIdOf(c.get('owner'));
    const status = await admin.twoFactor.disable(keyId, c.req.valid('json'));
    return c.json(status);
  });

  app.get('/status', async (c) => c.json(await admin.dashboard()));
  app.get('/config', (c) => c.json(admin.startupSettings()));
  app.get('/errors', (c) => c.json({ object: 'list', data: admin.errors.list() }));
  return app;
}
