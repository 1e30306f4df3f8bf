/**
 * Images in the playground's chat, driven in headless Chromium (Debian's chromium through playwright-core)
 * on the tiny random-weight SmolVLM-shaped fixture: attached by the file picker, a paste and a drop; sent as
 * an OpenAI image_url data URL; shown as a thumbnail; the answer streams back and equals the server's
 * greedy answer to the same request made here. A model without vision is refused in the page.
 * The PNG is made by ImageMagick.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { FIXTURE_CATALOG, type HubStandIn, startFixtureHub } from '../support/hub-stand-in.ts';
import { launchChromium } from '../support/chromium.ts';
import { json, listening } from '../support/server.ts';

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
let browser: Browser;
let page: Page;
let png: Buffer;
const pageErrors: string[] = [];

before(async () => {
  png = execFileSync('convert', ['-size', '50x40', 'gradient:red-blue', '-depth', '8', 'png:-']);
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'] });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`${srv.url}/playground.html`);
  await page.waitForSelector('#model option[value="tiny-vlm:test"]', { state: 'attached' });
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  await hub?.close();
});

const image = () => ({ name: 'gradient.png', mimeType: 'image/png', buffer: png });

test('a model without vision: the image is refused in the page, nothing is attached', async () => {
  await page.selectOption('#model', 'tiny-llama:test');
  await page.setInputFiles('#image-file', image());
  await page.waitForFunction(() => /does not read images/.test(document.getElementById('attach-status')?.textContent ?? ''));
  assert.match((await page.textContent('#attach-status')) ?? '', /tiny-llama:test does not read images \(no vision capability\)/);
  assert.equal(await page.locator('#attachments .attachment').count(), 0);
});

test('a vision model: picker, paste and drop attach thumbnails; the image goes as an image_url data URL; the answer streams', async () => {
  await page.selectOption('#model', 'tiny-vlm:test');
  await page.click('#pull');
  await page.waitForFunction(() => document.getElementById('pull-status')?.textContent === 'success', undefined, { timeout: 60_000 });
  await page.setInputFiles('#image-file', image());
  await page.locator('#attachments .attachment img').first().waitFor();
  // paste into the prompt and drop on the chat panel, as a browser delivers files
  const b64 = png.toString('base64');
  for (const how of ['paste', 'drop']) {
    await page.evaluate(([data, how]) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
      if (how === 'paste') {
        document.getElementById('prompt')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true }));
      } else {document.getElementById('chat-panel')!.dispatchEvent(
          new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }),
        );}
    }, [b64, how]);
  }
  await page.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 3);
  // keep one image: remove the two others
  await page.locator('#attachments .attachment button').first().click();
  await page.locator('#attachments .attachment button').first().click();
  await page.waitForFunction(() => document.querySelectorAll('#attachments .attachment').length === 1);

  await page.click('#chat-options summary');
  await page.fill('#temperature', '0');
  await page.fill('#max-tokens', '12');
  await page.fill('#prompt', 'What is in the picture?');
  const sent = page.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
  await page.evaluate(() => {
    const w = window as unknown as { updates: number };
    w.updates = 0;
    new MutationObserver(() => w.updates++).observe(document.getElementById('transcript')!, {
      subtree: true,
      childList: true,
      characterData: true,
    });
  });
  await page.click('#send');
  const body = (await sent).postDataJSON();
  assert.deepEqual(body.messages, [{
    role: 'user',
    content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${b64}` } }, { type: 'text', text: 'What is in the picture?' }],
  }]);
  await page.waitForFunction(() => /tokens\/s/.test(document.getElementById('chat-stats')?.textContent ?? ''), undefined, {
    timeout: 60_000,
  });
  assert.equal(await page.locator('.msg.error').count(), 0, (await page.locator('.msg.error').allTextContents()).join());
  const thumb = page.locator('.msg.user img.thumb');
  assert.equal(await thumb.count(), 1);
  assert.ok(
    await thumb.evaluate((i: HTMLImageElement) => i.naturalWidth === 50 && i.naturalHeight === 40),
    'the thumbnail shows the image',
  );
  assert.equal(await page.locator('#attachments .attachment').count(), 0, 'the attachment went with the message');
  const reply = (await page.textContent('.msg.assistant')) ?? '';
  assert.ok(reply.length > 0);
  assert.ok(await page.evaluate(() => (window as unknown as { updates: number }).updates) > 3, 'the reply streamed in pieces');
  // the server's greedy answer to the same request, asked here without the page
  const direct = await fetch(`${srv.url}/v1/chat/completions`, json({ ...body, stream: false, stream_options: undefined }));
  assert.equal(direct.status, 200);
  assert.equal((await direct.json()).choices[0].message.content, reply);
  assert.match((await page.textContent('#chat-stats')) ?? '', /^12 tokens, [\d.]+ tokens\/s, stopped: length$/);
  await page.screenshot({ path: '/tmp/svc-playground-vision.png', fullPage: true });

  // switching to a model without vision with an image waiting: the page says so and sends nothing
  await page.setInputFiles('#image-file', image());
  await page.locator('#attachments .attachment').waitFor();
  await page.selectOption('#model', 'tiny-llama:test');
  await page.fill('#prompt', 'and now?');
  await page.click('#send');
  await page.waitForFunction(() => /remove the image/.test(document.getElementById('attach-status')?.textContent ?? ''));
  assert.equal(await page.locator('.msg.user').count(), 1, 'nothing was sent');
  assert.deepEqual(pageErrors, []);
});
