/**
 * The console's search views driven for real in headless Chromium (Debian's chromium through
 * playwright-core) against a listening server: a cluster on a libSQL file of its own, a tenant and a
 * collection made in the page, a key moved to that cluster and granted the collection, the key's own
 * search calls working with the grant and refused without it, document counts, revocation and deletes.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';
import { startPostgres, stopPostgresOnly, type TestPostgres } from '../support/postgres-search.ts';
import { json, listening } from '../support/server.ts';

let srv: Awaited<ReturnType<typeof listening>>;
let pg: TestPostgres;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let shots: string;
let clusterFile: string;
let adminKey: string;
const pageErrors: string[] = [];
let reader: { id: string; token: string };
let stranger: { id: string; token: string };

before(async () => {
  shots = await mkdtemp(join(tmpdir(), 'svc-console-shots-'));
  clusterFile = join(await mkdtemp(join(tmpdir(), 'svc-remote-cluster-')), 'remote.db');
  pg = await startPostgres();
  srv = await listening();
  adminKey = (await srv.keys.create({ name: 'operator', role: 'admin' })).token;
  reader = await srv.keys.create({ name: 'reader-app', role: 'user' });
  stranger = await srv.keys.create({ name: 'stranger', role: 'user' });
  browser = await launchChromium();
  ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await ctx.newPage();
  page.on('dialog', (d) => void d.accept());
  page.on('pageerror', (e) => pageErrors.push(e.message));
  console.log(`screenshots: ${shots}`);
  await page.goto(`${srv.url}/admin.html`);
  await page.waitForSelector('#signin:not([hidden])');
  await page.fill('#signin-key', adminKey);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('#console:not([hidden])');
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  await pg?.stop();
});

const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
const view = async (name: string) => {
  await page.click(`nav button[data-view="${name}"]`);
  await page.waitForSelector(`#view-${name}:not([hidden])`);
};
const noticeText = () => page.textContent('#notice');
const COLLECTION = '/svc/v1/search/tenants/acme/collections/handbook';
const asKey = (token: string, method: string, path: string, body?: unknown) =>
  fetch(
    `${srv.url}${path}`,
    body === undefined ? { method, headers: { authorization: `Bearer ${token}` } } : {
      ...json(body, { authorization: `Bearer ${token}` }),
      method,
    },
  );

test('clusters: the server store is listed as default; a libSQL file cluster is added and reported reachable', async () => {
  await view('search');
  const def = page.locator('#clusters-table tr[data-cluster="default"]');
  await def.waitFor();
  assert.match((await def.textContent()) ?? '', /server's own store/);
  assert.equal(await def.locator('button', { hasText: 'Delete' }).count(), 0, 'the default cluster cannot be deleted');
  // a bad URL is refused by the server and said in the page
  await page.fill('#cluster-id', 'bad');
  await page.fill('#cluster-url', 'ftp://nowhere');
  await page.click('#cluster-form button[type=submit]');
  await page.waitForFunction(() => /url/.test(document.getElementById('notice')?.textContent ?? ''));
  await page.fill('#cluster-id', 'remote');
  await page.selectOption('#cluster-kind', 'libsql');
  await page.fill('#cluster-url', `file:${clusterFile}`);
  await page.click('#cluster-form button[type=submit]');
  const row = page.locator('#clusters-table tr[data-cluster="remote"]');
  await row.waitFor();
  await row.locator('text=/reachable · fts5-bm25/').waitFor();
  assert.match((await noticeText()) ?? '', /Added cluster remote/);
  const listed = await (await asKey(adminKey, 'GET', '/svc/v1/search/clusters/remote')).json();
  assert.equal(listed.url, `file://${clusterFile}`, 'the URL as the server normalised it');
  assert.equal(listed.status.reachable, true);
  await shot('search-clusters');
});

test('collections: a tenant and a collection are created in the chosen cluster', async () => {
  await page.locator('#clusters-table tr[data-cluster="remote"] button', { hasText: 'Collections' }).click();
  await page.waitForSelector('#view-collections:not([hidden])');
  // the view shows at once; its cluster list is loaded after it (the chosen one must end up selected)
  await page.waitForFunction(() => (document.getElementById('col-cluster') as HTMLSelectElement | null)?.options.length);
  assert.equal(await page.inputValue('#col-cluster'), 'remote');
  await page.fill('#tenant-name', 'acme');
  await page.click('#tenant-form button[type=submit]');
  await page.locator('#tenants-table tr[data-tenant="acme"]').waitFor();
  await page.waitForFunction(() => document.getElementById('col-tenant-label')?.textContent === 'acme');
  await page.fill('#collection-name', 'handbook');
  await page.click('#collection-form button[type=submit]');
  const row = page.locator('#collections-table tr[data-collection="handbook"]');
  await row.waitFor();
  assert.match((await row.textContent()) ?? '', /scol_\w+/);
  const cols = await (await asKey(adminKey, 'GET', '/svc/v1/search/clusters/remote/tenants/acme/collections')).json();
  assert.deepEqual(cols.data.map((c: { name: string }) => c.name), ['handbook']);
  assert.equal(cols.data[0].document_count, 0);
  // the default cluster has no tenant of that name: the collection lives in the remote cluster only
  assert.equal((await asKey(adminKey, 'GET', '/svc/v1/search/clusters/default/tenants/acme')).status, 404);
});

test('grants: a key moved to the cluster and granted the collection searches it; others get 404', async () => {
  // before any grant: the key's cluster is the default one, where acme/handbook does not exist
  assert.equal((await asKey(reader.token, 'POST', `${COLLECTION}/query`, { q: 'granite' })).status, 404);
  await view('grants');
  const readerRow = page.locator('#reach-table tr', { hasText: 'reader-app' });
  await readerRow.waitFor();
  assert.match((await readerRow.textContent()) ?? '', /default.*nothing granted yet/);
  assert.match((await page.locator('#reach-table tr', { hasText: 'operator' }).textContent()) ?? '', /every collection \(admin key\)/);
  await readerRow.locator('button', { hasText: 'Edit' }).click();
  await page.waitForSelector('#grant-editor:not([hidden])');
  await page.selectOption('#grant-cluster', 'remote');
  await page.waitForFunction(() => /searches cluster remote/.test(document.getElementById('notice')?.textContent ?? ''));
  await page.waitForSelector('#grant-tenant option[value="acme"]', { state: 'attached' });
  await page.waitForSelector('#grant-collection option[value="handbook"]', { state: 'attached' });
  await page.selectOption('#grant-collection', 'handbook');
  await page.selectOption('#grant-access', 'write');
  await page.click('#grant-form button[type=submit]');
  await page.locator('#grants-table tr[data-grant="acme/handbook"]').waitFor();
  assert.match((await page.locator('#reach-table tr', { hasText: 'reader-app' }).textContent()) ?? '', /remote.*acme\/handbook \(write\)/);
  const access = await (await asKey(adminKey, 'GET', `/svc/v1/admin/keys/${reader.id}/search`)).json();
  assert.deepEqual(access.search, {
    cluster: 'remote',
    all_collections: false,
    grants: [{ tenant: 'acme', collection: 'handbook', access: 'write' }],
  });
  await shot('search-grants');

  // the key's own calls: write a document, then find it
  const put = await asKey(reader.token, 'POST', `${COLLECTION}/documents`, {
    documents: [{ id: 'quarry', text: '# Quarry\n\nThe granite quarry opens at dawn.' }, { id: 'mill', text: 'The mill grinds wheat.' }],
  });
  assert.equal(put.status, 200, await put.clone().text());
  const q = await asKey(reader.token, 'POST', `${COLLECTION}/query`, { q: 'granite', mode: 'keyword' });
  assert.equal(q.status, 200);
  const hits = (await q.json()).data;
  assert.equal(hits[0].document_id, 'quarry');
  // a key without the grant: the collection is hidden (404), as if it did not exist
  assert.equal((await asKey(stranger.token, 'POST', `${COLLECTION}/query`, { q: 'granite' })).status, 404);

  // the console counts the documents
  await view('collections');
  const row = page.locator('#collections-table tr[data-collection="handbook"]');
  await page.waitForFunction(() =>
    document.querySelector('#collections-table tr[data-collection="handbook"] td:nth-child(4)')?.textContent === '2'
  );
  const cells = await row.locator('td').allTextContents();
  assert.equal(cells[3], '2', 'documents');
  assert.equal(cells[4], '2', 'chunks');
  await shot('search-collections');
});

test('a read grant refuses writes; revoking the grant hides the collection again; no search access is 403', async () => {
  await view('grants');
  await page.locator('#reach-table tr', { hasText: 'reader-app' }).locator('button', { hasText: 'Edit' }).click();
  await page.waitForSelector('#grant-collection option[value="handbook"]', { state: 'attached' });
  await page.selectOption('#grant-collection', 'handbook');
  await page.selectOption('#grant-access', 'read');
  await page.click('#grant-form button[type=submit]');
  await page.waitForFunction(() => /acme\/handbook \(read\)/.test(document.getElementById('reach-table')?.textContent ?? ''));
  assert.equal(await page.locator('#grants-table tr[data-grant]').count(), 1, 'the new access replaced the earlier one');
  const write = await asKey(reader.token, 'POST', `${COLLECTION}/documents`, { documents: [{ id: 'x', text: 'more' }] });
  assert.equal(write.status, 403);
  assert.equal((await write.json()).error, 'search_write_denied');
  assert.equal((await asKey(reader.token, 'POST', `${COLLECTION}/query`, { q: 'granite', mode: 'keyword' })).status, 200);

  await page.locator('#grants-table tr[data-grant="acme/handbook"] button.revoke-grant').click();
  await page.waitForFunction(() => /Revoked acme\/handbook/.test(document.getElementById('notice')?.textContent ?? ''));
  await page.waitForFunction(() => /nothing granted yet/.test(document.getElementById('reach-table')?.textContent ?? ''));
  assert.equal((await asKey(reader.token, 'POST', `${COLLECTION}/query`, { q: 'granite' })).status, 404);

  await page.selectOption('#grant-cluster', '');
  await page.waitForFunction(() => /no search access now/.test(document.getElementById('notice')?.textContent ?? ''));
  const denied = await asKey(reader.token, 'POST', `${COLLECTION}/query`, { q: 'granite' });
  assert.equal(denied.status, 403);
  assert.equal((await denied.json()).error, 'search_access_denied');
});

test('deletes: collection, tenant and cluster removed from the page, with what is under them', async () => {
  await view('collections');
  await page.selectOption('#col-cluster', 'remote');
  const row = page.locator('#collections-table tr[data-collection="handbook"]');
  await row.waitFor();
  await row.locator('button', { hasText: 'Delete' }).click();
  await page.waitForFunction(() => /no collection yet/.test(document.getElementById('collections-table')?.textContent ?? ''));
  assert.equal((await asKey(adminKey, 'GET', '/svc/v1/search/clusters/remote/tenants/acme/collections/handbook')).status, 404);
  await page.locator('#tenants-table tr[data-tenant="acme"] button', { hasText: 'Delete' }).click();
  await page.waitForFunction(() => /no tenant yet/.test(document.getElementById('tenants-table')?.textContent ?? ''));
  await view('search');
  await page.locator('#clusters-table tr[data-cluster="remote"] button', { hasText: 'Delete' }).click();
  await page.waitForFunction(() => !document.querySelector('#clusters-table tr[data-cluster="remote"]'));
  assert.equal((await asKey(adminKey, 'GET', '/svc/v1/search/clusters/remote')).status, 404);
  // a CSRF-less request with the console's cookie changes nothing
  const cookie = (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  assert.equal((await fetch(`${srv.url}/svc/v1/search/clusters`, json({ id: 'x', url: `file:${clusterFile}.2` }, { cookie }))).status, 401);
  assert.deepEqual(pageErrors, [], 'no script error in the page');
});

test('a PostgreSQL cluster from the page: reachable with its full-text method, counts, then unreachable said in the page', async () => {
  await view('search');
  await page.fill('#cluster-id', 'pg');
  await page.selectOption('#cluster-kind', 'postgres');
  assert.equal(await page.isHidden('#cluster-token'), true, 'PostgreSQL takes its credentials in the URL');
  await page.fill('#cluster-url', pg.url);
  await page.click('#cluster-form button[type=submit]');
  const row = page.locator('#clusters-table tr[data-cluster="pg"]');
  await row.locator('text=/reachable · tsvector-ts_rank_cd · vectors: (exact-scan|pgvector)/').waitFor();
  assert.ok(!((await row.textContent()) ?? '').includes(new URL(pg.url).password || '\0'), 'no password shown');
  // a key of that cluster writes two documents (one of them long enough for several chunks)
  const admin = { authorization: `Bearer ${adminKey}` };
  assert.equal((await fetch(`${srv.url}/svc/v1/search/clusters/pg/tenants`, json({ name: 'lab' }, admin))).status, 201);
  assert.equal((await fetch(`${srv.url}/svc/v1/search/clusters/pg/tenants/lab/collections`, json({ name: 'notes' }, admin))).status, 201);
  const grant = await fetch(`${srv.url}/svc/v1/admin/keys/${stranger.id}/search`, {
    ...json({ search: { cluster: 'pg', grants: [{ tenant: 'lab', access: 'write' }] } }, admin),
    method: 'PUT',
  });
  assert.equal(grant.status, 200);
  const long = Array.from({ length: 3 }, (_, i) => `# Part ${i + 1}\n\n${'Basalt columns cool slowly. '.repeat(80)}`).join('\n\n');
  const put = await asKey(stranger.token, 'POST', '/svc/v1/search/tenants/lab/collections/notes/documents', {
    documents: [{ id: 'short', text: 'Basalt.' }, { id: 'long', text: long }],
  });
  assert.equal(put.status, 200, await put.clone().text());
  const chunks = (await put.json()).data.reduce((n: number, d: { chunks: number }) => n + d.chunks, 0);
  assert.ok(chunks > 2, `several chunks: ${chunks}`);
  await view('collections');
  await page.selectOption('#col-cluster', 'pg');
  const cells = page.locator('#collections-table tr[data-collection="notes"] td');
  await cells.first().waitFor();
  assert.deepEqual((await cells.allTextContents()).slice(3, 5), ['2', String(chunks)]);
  await shot('search-collections-postgres');

  // the database goes away: the page says so instead of failing
  stopPostgresOnly(pg);
  await view('search');
  const status = await (await fetch(`${srv.url}/svc/v1/search/clusters/pg`, { headers: admin })).json();
  assert.equal(status.status.reachable, false, 'the status asks the database, not a memory of it');
  await row.locator('td.error, span.error', { hasText: 'unreachable' }).waitFor();
  await view('collections');
  await page.selectOption('#col-cluster', 'pg');
  await page.waitForFunction(() =>
    document.querySelector('#collections-table tr[data-collection="notes"] td:nth-child(4)')?.textContent === 'cluster unreachable'
  );
  await shot('search-cluster-unreachable');
  assert.deepEqual(pageErrors, []);
});
