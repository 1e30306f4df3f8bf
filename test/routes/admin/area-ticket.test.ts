/** Area tickets, CSRF binding, failed sign-in limits and TOTP enrollment over real HTTP (in-process app). */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import { type InProcess, inProcess, json } from '../../support/server.ts';

let srv: InProcess;
let admin: string;
let user: string;

before(async () => {
  srv = await inProcess();
  admin = (await srv.s.keys.create({ name: 'operator', role: 'admin' })).token;
  user = (await srv.s.keys.create({ name: 'someone', role: 'user' })).token;
});
after(async () => srv?.close());

/** Cookies of a response as name → { value, attributes }. */
function cookies(res: Response) {
  const out: Record<string, { value: string; attrs: string[] }> = {};
  for (const line of res.headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(';').map((s) => s.trim());
    const i = pair.indexOf('=');
    out[pair.slice(0, i)] = { value: pair.slice(i + 1), attrs: attrs.map((a) => a.toLowerCase()) };
  }
  return out;
}

const signIn = (body: unknown, query = '', headers: Record<string, string> = {}) =>
  srv.request(`http://svc.test/svc/v1/admin/area-ticket${query}`, json(body, headers));

test('sign-in sets an HttpOnly SameSite=Strict ticket; with persist a 12 h Max-Age; logout clears it', async () => {
  const res = await signIn({ key: admin });
  assert.equal(res.status, 200);
  const c = cookies(res);
  const t = c['svc-area-ticket'];
  assert.ok(t.value.length >= 40);
  assert.ok(t.attrs.includes('httponly') && t.attrs.includes('samesite=strict') && t.attrs.includes('path=/'));
  assert.ok(!t.attrs.some((a) => a.startsWith('max-age') || a.startsWith('expires')), 'a session cookie without persist');
  assert.ok(!t.attrs.includes('secure'), 'not Secure over plain HTTP');
  assert.ok(!c['svc-csrf'].attrs.includes('httponly'));
  const body = await res.json();
  assert.equal(body.csrf_token, c['svc-csrf'].value);
  assert.equal(body.ticket, undefined, 'the ticket stays in the cookie');

  const p = await signIn({ key: admin }, '?persist=true');
  const pt = cookies(p)['svc-area-ticket'];
  assert.ok(pt.attrs.includes('max-age=43200'), pt.attrs.join(';'));

  const tls = await srv.request('https://svc.test/svc/v1/admin/area-ticket', json({ key: admin }));
  assert.ok(cookies(tls)['svc-area-ticket'].attrs.includes('secure'));

  // the ticket + CSRF header authenticates admin routes; the ticket alone does not
  const cookie = `svc-area-ticket=${t.value}; svc-csrf=${body.csrf_token}`;
  assert.equal((await srv.request('/svc/v1/admin/keys', { headers: { cookie } })).status, 401);
  assert.equal((await srv.request('/svc/v1/admin/keys', { headers: { cookie, 'x-svc-csrf': 'wrong' } })).status, 403);
  const ok = await srv.request('/svc/v1/admin/keys', { headers: { cookie, 'x-svc-csrf': body.csrf_token } });
  assert.equal(ok.status, 200);
  // a state-changing request from another origin is refused even with the header
  const cross = await srv.request('http://svc.test/svc/v1/admin/settings', {
    method: 'PATCH',
    headers: { cookie, 'x-svc-csrf': body.csrf_token, origin: 'http://evil.test', 'content-type': 'application/json' },
    body: '{"sync_timeout_seconds":1}',
  });
  assert.equal(cross.status, 403);
  assert.equal((await cross.json()).error, 'csrf_check_failed');
  const last = (await srv.s.keys.list()).find((k) => k.name === 'operator')!;
  assert.ok(last.last_used_at, 'sign-in records when the key was last used');

  const out = await srv.request('http://svc.test/svc/v1/admin/logout', {
    method: 'POST',
    headers: { cookie, 'x-svc-csrf': body.csrf_token },
  });
  assert.equal(out.status, 200);
  const cleared = cookies(out)['svc-area-ticket'];
  assert.equal(cleared.value, '');
  assert.ok(cleared.attrs.includes('max-age=0'));
  await new Promise((r) => setTimeout(r, 2100)); // past the session cache of another node
  assert.equal(
    (await srv.request('/svc/v1/admin/keys', { headers: { cookie, 'x-svc-csrf': body.csrf_token } })).status,
    401,
    'the ticket is void after logout',
  );
});

test('TOTP enrollment: setup draws a QR code, a code confirms it, ten recovery codes work once, disable needs a code', async () => {
  const h = { authorization: `Bearer ${admin}` };
  const setup = await srv.request('/svc/v1/admin/2fa/setup', { method: 'POST', headers: h });
  assert.equal(setup.status, 200);
  const s = await setup.json();
  assert.match(s.qrSvg, /^<svg[\s\S]*<\/svg>\s*$/);
  assert.match(s.otpauth_url, /^otpauth:\/\/totp\/svc:operator\?/);
  assert.equal(new URL(s.otpauth_url).searchParams.get('secret'), s.secret);
  const totp = new TOTP({ secret: Secret.fromBase32(s.secret), digits: 6, period: 30, algorithm: 'SHA1' });
  assert.equal(
    (await srv.request('/svc/v1/admin/2fa/confirm', json({ code: '000000' === totp.generate() ? '111111' : '000000' }, h))).status,
    401,
  );
  const conf = await srv.request('/svc/v1/admin/2fa/confirm', json({ code: totp.generate() }, h));
  assert.equal(conf.status, 200);
  const { recovery_codes } = await conf.json();
  assert.equal(recovery_codes.length, 10);
  assert.equal(new Set(recovery_codes).size, 10);
  const raw = await srv.s.store.db.selectFrom('admin_two_factor').selectAll().executeTakeFirstOrThrow();
  for (const c of recovery_codes) assert.ok(!raw.recovery_hashes.includes(c), 'stored hashed');

  // now the key alone is not enough
  const noCode = await signIn({ key: admin });
  assert.equal(noCode.status, 401);
  assert.equal((await noCode.json()).error, 'second_factor_required');
  const code = totp.generate();
  assert.equal((await signIn({ key: admin, code })).status, 200);
  assert.equal((await signIn({ key: admin, code })).status, 401, 'a TOTP code signs in once');
  assert.equal((await signIn({ key: admin, recovery_code: recovery_codes[3].toUpperCase() })).status, 200);
  const again = await signIn({ key: admin, recovery_code: recovery_codes[3] });
  assert.equal(again.status, 401);
  assert.equal((await again.json()).error, 'invalid_second_factor');
  const status = await (await srv.request('/svc/v1/admin/2fa', { headers: h })).json();
  assert.deepEqual(status, { enabled: true, pending: false, recovery_codes_left: 9 });
  assert.equal((await srv.request('/svc/v1/admin/2fa/setup', { method: 'POST', headers: h })).status, 409);
  assert.equal((await srv.request('/svc/v1/admin/2fa/disable', json({}, h))).status, 401);
  assert.equal((await srv.request('/svc/v1/admin/2fa/disable', json({ recovery_code: recovery_codes[0] }, h))).status, 200);
  assert.equal((await signIn({ key: admin })).status, 200, 'without the factor the key signs in alone again');
});

test('a user key, an unknown key and bad bodies are refused; failed sign-ins are rate limited', async () => {
  assert.equal((await signIn({ key: user }, '', { 'x-forwarded-for': '1' })).status, 401);
  assert.equal((await signIn({})).status, 400);
  assert.equal((await signIn({ key: admin }, '?persist=maybe')).status, 400);
  let last: Response | undefined;
  for (let i = 0; i < 6; i++) last = await signIn({ key: 'svc_nope' });
  assert.equal(last!.status, 429);
  assert.equal((await last!.json()).error, 'too_many_sign_in_attempts');
  assert.ok(Number(last!.headers.get('retry-after')) > 0);
  // the good key is refused too from that client while the window lasts
  assert.equal((await signIn({ key: admin })).status, 429);
});
