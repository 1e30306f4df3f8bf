/** The playground, driven for real in headless Chromium (Debian's chromium, through playwright-core). */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PDFDocument, StandardFonts } from '@cantoo/pdf-lib';
import type { Browser, Page } from 'playwright-core';
import { FIXTURE_CATALOG, type HubStandIn, startFixtureHub } from '../support/hub-stand-in.ts';
import { launchChromium } from '../support/chromium.ts';
import { listening } from '../support/server.ts';

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
let browser: Browser;

before(async () => {
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'] });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  await hub?.close();
});

test('the index page links the playground and shows the version', async () => {
  const page = await browser.newPage();
  await page.goto(`${srv.url}/`);
  await page.waitForFunction(() => /\d{4}\.\d+\.\d+/.test(document.getElementById('version')?.textContent ?? ''));
  await page.click('text=Open the playground');
  await page.waitForURL(/playground\.html$/);
  await page.close();
});

/** The playground with tiny-llama chosen as the chat model. */
async function chatWithLlama(): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${srv.url}/playground.html`);
  await page.waitForSelector('#model option[value="tiny-llama:test"]', { state: 'attached' });
  await page.selectOption('#model', 'tiny-llama:test');
  return page;
}

/** Sends the prompt and waits until the reply's stats (tokens/s) show it finished. */
async function sendAndWait(page: Page): Promise<void> {
  await page.click('#send');
  await page.waitForFunction(() => /tokens\/s/.test(document.getElementById('chat-stats')?.textContent ?? ''), undefined, {
    timeout: 60_000,
  });
}

test('chat: pull a model, send a message, the reply streams in with stats', async () => {
  const page = await chatWithLlama();
  await page.click('#pull');
  await page.waitForFunction(() => document.getElementById('pull-status')?.textContent === 'success', undefined, { timeout: 30_000 });
  await page.fill('#prompt', 'Hello there');
  await sendAndWait(page);
  const reply = await page.textContent('.msg.assistant');
  assert.ok(reply && reply.length > 0, 'the model replied');
  assert.equal(await page.locator('.msg.error').count(), 0);
  assert.equal(await page.textContent('.msg.user'), 'Hello there');
  await page.screenshot({ path: '/tmp/svc-playground.png', fullPage: true });
  await page.close();
});

test('PDF: info of an uploaded PDF, and a server error shown as text', async () => {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 0; i < 2; i++) doc.addPage([300, 400]).drawText(`page ${i + 1}`, { x: 40, y: 300, font, size: 18 });
  const pdf = Buffer.from(await doc.save());
  const page = await browser.newPage();
  await page.goto(`${srv.url}/playground.html`);
  await page.setInputFiles('#pdf-file', { name: 'two.pdf', mimeType: 'application/pdf', buffer: pdf });
  await page.click('#pdf-form button[type=submit]');
  await page.waitForSelector('#pdf-result pre');
  const info = JSON.parse((await page.textContent('#pdf-result pre')) ?? '{}');
  assert.equal(info.page_count, 2);
  await page.setInputFiles('#pdf-file', { name: 'not.pdf', mimeType: 'application/pdf', buffer: Buffer.from('hello, not a pdf') });
  await page.click('#pdf-form button[type=submit]');
  await page.waitForFunction(() => !/working/.test(document.getElementById('pdf-result')?.textContent ?? 'working'));
  assert.match((await page.textContent('#pdf-result')) ?? '', /PDF|supported/i);
  await page.close();
});

test('chat with a system prompt, parameters and a JSON schema: the streamed reply parses and matches', async () => {
  const page = await chatWithLlama();
  await page.click('#chat-options summary');
  await page.fill('#system', 'Answer in JSON.');
  await page.fill('#temperature', '0');
  await page.fill('#max-tokens', '48');
  await page.fill('#schema', JSON.stringify({ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] }));
  await page.fill('#prompt', 'Give me a number');
  // count the streamed updates of the reply as they arrive
  await page.evaluate(() => {
    const w = window as unknown as { updates: number };
    w.updates = 0;
    new MutationObserver(() => {
      w.updates++;
    }).observe(document.getElementById('transcript')!, { subtree: true, childList: true, characterData: true });
  });
  await sendAndWait(page);
  const reply = JSON.parse((await page.textContent('.msg.assistant')) ?? '');
  assert.equal(typeof reply.a, 'number');
  assert.ok(await page.evaluate(() => (window as unknown as { updates: number }).updates) > 3, 'the reply streamed in pieces');
  await page.fill('#schema', '{not json');
  await page.fill('#prompt', 'again');
  await page.click('#send');
  await page.waitForSelector('.msg.error');
  assert.match((await page.textContent('.msg.error')) ?? '', /schema is not valid JSON/);
  await page.screenshot({ path: '/tmp/svc-playground-structured.png', fullPage: true });
  await page.close();
});

test('document to Markdown: a dropped PDF comes back as Markdown', async () => {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const p = doc.addPage([400, 500]);
  p.drawText('Quarterly report', { x: 40, y: 440, font, size: 24 });
  p.drawText('Sales grew in every region this quarter.', { x: 40, y: 400, font, size: 12 });
  const page = await browser.newPage();
  await page.goto(`${srv.url}/playground.html`);
  await page.setInputFiles('#doc-file', { name: 'report.pdf', mimeType: 'application/pdf', buffer: Buffer.from(await doc.save()) });
  await page.click('#doc-form button[type=submit]');
  await page.waitForSelector('#doc-result:not([hidden])', { timeout: 60_000 });
  const md = (await page.textContent('#doc-result')) ?? '';
  assert.match(md, /Quarterly report/);
  assert.match(md, /Sales grew in every region/);
  assert.match((await page.textContent('#doc-status')) ?? '', /1 page/);
  await page.screenshot({ path: '/tmp/svc-playground-markdown.png', fullPage: true });
  await page.close();
});
