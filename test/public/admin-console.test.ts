/**
 * The admin console driven for real in headless Chromium (Debian's chromium through playwright-core)
 * against a listening server: sign-in, TOTP enrollment with the code computed here, recovery codes,
 * persist and logout cookie attributes, cancelling another key's job, key creation, a model pull with a
 * moving progress bar, the Sync Timeout, and the security headers of the pages.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { FIXTURE_CATALOG, type HubStandIn, startFixtureHub } from '../support/hub-stand-in.ts';
import { launchChromium } from '../support/chromium.ts';
import { json, listening } from '../support/server.ts';
import { TaskProbe, testTasks } from '../support/test-tasks.ts';

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let shots: string;
let adminKey: string;
let userKey: { id: string; token: string };
let secret = '';
let recovery: string[] = [];
const probe = new TaskProbe();

before(async () => {
  shots = await mkdtemp(join(tmpdir(), 'svc-console-shots-'));
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'] }, { extraRoutes: testTasks(probe) });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  adminKey = (await srv.keys.create({ name: 'operator', role: 'admin' })).token;
  userKey = await srv.keys.create({ name: 'someone-else', role: 'user' });
  browser = await launchChromium();
  ctx = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  page = await ctx.newPage();
  page.on('dialog', (d) => void d.accept());
  console.log(`screenshots: ${shots}`);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  await hub?.close();
});

const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
const ticketCookie = async () => (await ctx.cookies()).find((c) => c.name === 'svc-area-ticket');
const view = async (name: string) => {
  await page.click(`nav button[data-view="${name}"]`);
  await page.waitForSelector(`#view-${name}:not([hidden])`);
};

async function signIn(opts: { code?: string; persist?: boolean } = {}) {
  await page.goto(`${srv.url}/admin.html`);
  await page.waitForSelector('#signin:not([hidden])');
  await page.fill('#signin-key', adminKey);
  if (opts.persist) await page.check('#signin-persist');
  await page.click('#signin-form button[type=submit]');
  if (opts.code) {
    await page.waitForSelector('#signin-code-row:not([hidden])');
    assert.match((await page.textContent('#signin-error')) ?? '', /code/);
    await page.fill('#signin-code', opts.code);
    await page.click('#signin-form button[type=submit]');
  }
  await page.waitForSelector('#console:not([hidden])');
}

async function logout() {
  await page.click('#logout');
  await page.waitForSelector('#signin:not([hidden])');
  assert.equal(await ticketCookie(), undefined, 'logout clears the ticket cookie');
  assert.equal((await ctx.cookies()).find((c) => c.name === 'svc-csrf'), undefined);
}

test('the pages carry CSP, framing, nosniff and referrer headers; the console needs a sign-in once keys exist', async () => {
  for (const path of ['/admin.html', '/playground.html', '/']) {
    const r = await fetch(`${srv.url}${path}`, { headers: { accept: 'text/html' } });
    assert.equal(r.status, 200);
    const csp = r.headers.get('content-security-policy') ?? '';
    for (const d of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"]) {
      assert.ok(csp.includes(d), `${path}: ${d} in ${csp}`);
    }
    // 'wasm-unsafe-eval' (WebAssembly compilation only, no JavaScript eval) on the playground alone
    assert.ok(!/unsafe-inline|(?<!wasm-)unsafe-eval/.test(csp), `${path}: no unsafe sources in ${csp}`);
    assert.equal(csp.includes("'wasm-unsafe-eval'"), path === '/playground.html', `${path}: ${csp}`);
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
  }
  assert.equal((await fetch(`${srv.url}/admin.js`)).headers.get('x-content-type-options'), 'nosniff');
  assert.equal((await fetch(`${srv.url}/svc/v1/admin/status`)).status, 401);
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  await page.goto(`${srv.url}/admin.html`);
  await page.waitForSelector('#signin:not([hidden])');
  await shot('sign-in');
  // a user key is no admin
  await page.fill('#signin-key', userKey.token);
  await page.click('#signin-form button[type=submit]');
  await page.waitForFunction(() => /admin/.test(document.getElementById('signin-error')?.textContent ?? ''));
  assert.deepEqual(violations, [], 'the console runs under its own CSP');
});

test('sign in with the admin key: a session cookie, HttpOnly, SameSite=Strict; the dashboard shows the server', async () => {
  await signIn();
  const c = await ticketCookie();
  assert.ok(c);
  assert.equal(c.httpOnly, true);
  assert.equal(c.sameSite, 'Strict');
  assert.equal(c.secure, false, 'plain HTTP: not Secure (Secure is set over TLS)');
  assert.equal(c.path, '/');
  assert.equal(c.expires, -1, 'without persist a session cookie');
  assert.equal(await page.evaluate(() => document.cookie.includes('svc-area-ticket')), false, 'scripts cannot read the ticket');
  await page.waitForFunction(() => /\d{4}\.\d+\.\d+/.test(document.getElementById('dash-version')?.textContent ?? ''));
  assert.match((await page.textContent('#dash-runtime')) ?? '', /node \d+/);
  assert.match((await page.textContent('#whoami')) ?? '', /operator/);
  await shot('dashboard');
});

test('two-factor: enroll from the QR secret with a computed TOTP code; ten recovery codes shown once', async () => {
  await view('security');
  await page.click('#tfa-setup');
  await page.waitForSelector('#tfa-enroll:not([hidden])');
  secret = ((await page.textContent('#tfa-secret')) ?? '').trim();
  assert.match(secret, /^[A-Z2-7]{32}$/);
  await page.waitForFunction(() => (document.getElementById('tfa-qr') as HTMLImageElement).naturalWidth > 0);
  await shot('two-factor-enroll');
  await page.fill('#tfa-code', new TOTP({ secret: Secret.fromBase32(secret) }).generate());
  await page.click('#tfa-confirm-form button[type=submit]');
  await page.waitForSelector('#tfa-recovery:not([hidden])');
  recovery = await page.locator('#tfa-recovery-list code').allTextContents();
  assert.equal(recovery.length, 10);
  await page.waitForFunction(() => /Enabled/.test(document.getElementById('tfa-status')?.textContent ?? ''));
  await shot('two-factor-recovery');
});

test('sign in again with the TOTP code, then with a recovery code and persist (12 h); logout clears the cookie', async () => {
  await logout();
  await signIn({ code: new TOTP({ secret: Secret.fromBase32(secret) }).generate() });
  assert.equal((await ticketCookie())?.expires, -1);
  await logout();
  const before = Date.now() / 1000;
  await signIn({ code: recovery[0], persist: true });
  const c = (await ticketCookie())!;
  assert.ok(Math.abs(c.expires - (before + 12 * 3600)) < 60, `persisted for 12 h (expires ${c.expires})`);
  assert.equal(c.httpOnly, true);
  assert.equal(c.sameSite, 'Strict');
  // a used recovery code does not work twice (checked over HTTP)
  const again = await fetch(`${srv.url}/svc/v1/admin/area-ticket`, json({ key: adminKey, recovery_code: recovery[0] }));
  assert.equal(again.status, 401);
  await view('security');
  await page.waitForFunction(() => /9 recovery/.test(document.getElementById('tfa-status')?.textContent ?? ''));
});

test("active jobs: the operator sees another key's job and cancels it", async () => {
  const sub = await fetch(
    `${srv.url}/svc/v1/test/work`,
    json({ gate: 'never' }, { authorization: `Bearer ${userKey.token}`, prefer: 'respond-async' }),
  );
  assert.equal(sub.status, 202);
  const { job_id } = await sub.json();
  await view('jobs');
  const row = page.locator(`#jobs-table tr:has(code:text("${job_id}"))`);
  await row.waitFor();
  assert.equal(await row.getAttribute('data-owner'), userKey.id);
  await shot('active-jobs');
  await row.locator('button.cancel-job').click();
  await page.waitForFunction((id) => !document.getElementById('jobs-table')?.textContent?.includes(id), job_id);
  let status = '';
  for (let i = 0; i < 50 && status !== 'cancelled'; i++) {
    status =
      (await (await fetch(`${srv.url}/svc/v1/jobs/${job_id}`, { headers: { authorization: `Bearer ${userKey.token}` } })).json()).status;
    if (status !== 'cancelled') await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(status, 'cancelled', 'the owner sees its job cancelled');
});

test('keys: create a key, its token and reach are revealed once, and the token works', async () => {
  await view('keys');
  await page.fill('#key-name', 'ci-bot');
  await page.click('#key-form button[type=submit]');
  await page.waitForSelector('#key-reveal:not([hidden])');
  const token = ((await page.textContent('#key-token')) ?? '').trim();
  assert.match(token, /^svc_/);
  assert.match((await page.textContent('#key-reach')) ?? '', /Reach/);
  assert.equal((await fetch(`${srv.url}/api/tags`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  await page.locator('#keys-table tr', { hasText: 'ci-bot' }).waitFor();
  assert.match(
    (await page.locator('#keys-table tr', { hasText: 'operator' }).textContent()) ?? '',
    /\d{4}|\d+\/\d+/,
    'last used is shown for the signed-in key',
  );
  await shot('keys');
  await page.click('#key-reveal-done');
  await view('dashboard');
  await view('keys');
  assert.ok(!((await page.content()).includes(token)), 'the token is not shown again');
});

test('models: pull a catalog model with a live progress bar, then show its details', async () => {
  hub.slow('svc-test/tiny-llama', 'onnx/model.onnx', 40, 24 * 1024);
  await view('models');
  const row = page.locator('#models-table tr[data-model="tiny-llama:test"]');
  await row.locator('button', { hasText: 'Pull' }).click();
  const seen = new Set<number>();
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const { value, status } = await page.evaluate(() => ({
      value: (document.getElementById('pull-progress') as HTMLProgressElement).value,
      status: document.getElementById('pull-status')?.textContent ?? '',
    }));
    seen.add(value);
    if (status === 'success' || /failed/.test(status)) {
      assert.equal(status, 'success');
      break;
    }
    if (seen.size === 3) await shot('models-pulling');
    await new Promise((r) => setTimeout(r, 30));
  }
  const between = [...seen].filter((v) => v > 0 && v < 100);
  assert.ok(between.length >= 2, `the bar moved through several values: ${[...seen].join(', ')}`);
  await row.locator('text=downloaded').waitFor();
  await row.locator('button', { hasText: 'Details' }).click();
  await page.waitForSelector('#model-details:not([hidden])');
  assert.match((await page.textContent('#model-details')) ?? '', /"family": "llama"/);
  await shot('models');
});

test('settings: the Sync Timeout is validated, saved, and a slow task then answers 202', async () => {
  await view('settings');
  await page.waitForFunction(() => (document.getElementById('sync-timeout') as HTMLInputElement).value === '0');
  await page.fill('#sync-timeout', '-3');
  await page.click('#settings-form button[type=submit]');
  await page.waitForFunction(() => /greater than or equal to 0/i.test(document.getElementById('settings-status')?.textContent ?? ''));
  assert.equal((await srv.adminSettings.view()).sync_timeout_seconds, 0, 'an invalid value is not saved');
  await page.fill('#sync-timeout', '1');
  await page.click('#settings-form button[type=submit]');
  await page.waitForFunction(() => /Saved/.test(document.getElementById('settings-status')?.textContent ?? ''));
  await shot('settings');
  const slow = await fetch(`${srv.url}/svc/v1/test/work`, json({ ms: 2500 }, { authorization: `Bearer ${userKey.token}` }));
  assert.equal(slow.status, 202);
  await page.fill('#sync-timeout', '0');
  await page.click('#settings-form button[type=submit]');
  await page.waitForFunction(() => /Saved: Sync Timeout 0/.test(document.getElementById('settings-status')?.textContent ?? ''));
  await new Promise((r) => setTimeout(r, 2100)); // the setting cache of other nodes
  assert.equal((await fetch(`${srv.url}/svc/v1/test/work`, json({ ms: 1500 }, { authorization: `Bearer ${userKey.token}` }))).status, 200);
});

test('errors: a server fault shows in the recent-errors view; a cross-site style request is refused', async () => {
  const crash = await fetch(`${srv.url}/svc/v1/test/work`, json({ crash: true }, { authorization: `Bearer ${userKey.token}` }));
  assert.equal(crash.status, 500);
  await view('errors');
  await page.locator('#errors-table tr.error').first().waitFor();
  assert.match((await page.textContent('#errors-table')) ?? '', /secret internal detail/);
  await shot('errors');
  // the ticket without the CSRF header, or from another origin, authenticates nothing
  const cookie = (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const csrf = (await ctx.cookies()).find((c) => c.name === 'svc-csrf')!.value;
  assert.equal((await fetch(`${srv.url}/svc/v1/admin/keys`, json({ name: 'x' }, { cookie }))).status, 401);
  assert.equal(
    (await fetch(`${srv.url}/svc/v1/admin/keys`, json({ name: 'x' }, { cookie, 'x-svc-csrf': csrf, origin: 'http://evil.example' })))
      .status,
    403,
  );
  await logout();
});
