/**
 * In-browser inference in the playground, driven in Debian's Chromium: transformers.js (the web build served
 * from /vendor/) loads the server's own copy of tiny-llama through /svc/v1/model-files/ and decodes greedily
 * on WASM (headless Chromium offers no WebGPU adapter by default) and on WebGPU (with
 * --enable-unsafe-webgpu, Chromium's SwiftShader adapter). The page's text must equal the server's.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';
import { FIXTURE_CATALOG, type HubStandIn, startFixtureHub } from '../support/hub-stand-in.ts';
import { listening } from '../support/server.ts';

let hub: HubStandIn;
let srv: Awaited<ReturnType<typeof listening>>;
const browsers: Browser[] = [];

async function pull(name: string) {
  const res = await fetch(`${srv.url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: name, stream: false }) });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(((await res.json()) as { status: string }).status, 'success');
}

before(async () => {
  hub = await startFixtureHub();
  srv = await listening({ hubUrl: hub.url, hubAllowedHosts: ['127.0.0.1'] });
  for (const e of FIXTURE_CATALOG) srv.models.catalog.register(e);
  await pull('tiny-llama:test');
});

after(async () => {
  for (const b of browsers) await b.close();
  await srv?.stop();
  await hub?.close();
});

async function launch(extra: string[]): Promise<Browser> {
  const b = await launchChromium(extra, { gpu: true });
  browsers.push(b);
  return b;
}

/** Every request the page makes, and every CSP complaint and page error it raises. */
function watch(page: Page) {
  const seen = { urls: [] as string[], problems: [] as string[] };
  page.on('request', (r) => seen.urls.push(r.url()));
  page.on('pageerror', (e) => seen.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) seen.problems.push(m.text());
  });
  return seen;
}

async function runBoth(page: Page, prompt: string, max: number) {
  await page.goto(`${srv.url}/playground.html`);
  await page.waitForSelector('#local-model option[value="tiny-llama:test"]', { state: 'attached' });
  await page.selectOption('#local-model', 'tiny-llama:test');
  await page.fill('#local-prompt', prompt);
  await page.fill('#local-max', String(max));
  await page.click('#local-run');
  await page.waitForFunction(
    () =>
      !(document.getElementById('local-run') as HTMLButtonElement).disabled &&
      (document.getElementById('local-browser')?.textContent ?? '…') !== '…',
    undefined,
    { timeout: 180_000 },
  );
  return {
    server: (await page.textContent('#local-server')) ?? '',
    browser: (await page.textContent('#local-browser')) ?? '',
    backend: (await page.textContent('#local-backend')) ?? '',
    match: (await page.textContent('#local-match')) ?? '',
  };
}

/** The server's greedy text for the same prompt, asked directly (not through the page). */
async function serverGreedy(prompt: string, max: number): Promise<string> {
  const res = await fetch(`${srv.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny-llama:test', prompt, max_tokens: max, temperature: 0 }),
  });
  assert.equal(res.status, 200);
  return ((await res.json()) as { choices: { text: string }[] }).choices[0].text;
}

test("WASM: without a WebGPU adapter the page decodes on WASM, and its greedy text equals the server's", async () => {
  const browser = await launch(['--disable-gpu']);
  const page = await browser.newPage();
  const seen = watch(page);
  const prompt = 'Once upon a time';
  const r = await runBoth(page, prompt, 24);
  assert.match(r.backend, /^\(wasm, \d+ tokens/, r.backend);
  assert.ok(!r.browser.startsWith('error'), r.browser);
  assert.ok(r.server.length > 0, 'the server produced text');
  assert.equal(r.browser, r.server);
  assert.equal(r.server, await serverGreedy(prompt, 24), 'the page shows what the server answers');
  assert.equal(r.match, 'identical greedy text');
  // everything came from our own origin: the model through model-files, the runtime through /vendor/
  assert.deepEqual(seen.urls.filter((u) => !u.startsWith(srv.url) && !u.startsWith('blob:') && !u.startsWith('data:')), []);
  assert.ok(
    seen.urls.some((u) => u.includes('/svc/v1/model-files/svc-test/tiny-llama/resolve/main/onnx/')),
    'the ONNX file came from the server',
  );
  assert.ok(
    seen.urls.some((u) => /\/vendor\/ort\/dist\/ort-wasm-simd-threaded\.[a-z]+\.wasm$/.test(u)),
    'onnxruntime-web WASM came from /vendor/ort/',
  );
  assert.deepEqual(seen.problems, []);
  await page.screenshot({ path: '/tmp/svc-playground-in-browser-wasm.png', fullPage: true });
  await page.close();
});

test('WebGPU: with an adapter (SwiftShader behind --enable-unsafe-webgpu) the page decodes on WebGPU, same greedy text', async () => {
  const browser = await launch(['--enable-unsafe-webgpu']);
  const page = await browser.newPage();
  const seen = watch(page);
  await page.goto(`${srv.url}/playground.html`);
  const adapter = await page.evaluate(async () =>
    Boolean(await (navigator as unknown as { gpu?: { requestAdapter(): Promise<unknown> } }).gpu?.requestAdapter())
  );
  assert.ok(adapter, 'this Chromium offers a WebGPU adapter with --enable-unsafe-webgpu');
  const prompt = 'The weather today';
  const r = await runBoth(page, prompt, 24);
  assert.match(r.backend, /^\(webgpu, \d+ tokens/, `${r.backend} ${r.browser}`);
  assert.equal(r.browser, r.server);
  assert.equal(r.match, 'identical greedy text');
  assert.equal(r.server, await serverGreedy(prompt, 24));
  assert.ok(
    seen.urls.some((u) => /\/vendor\/ort\/dist\/ort-wasm-simd-threaded\.[a-z]+\.wasm$/.test(u)),
    'onnxruntime-web WASM came from /vendor/ort/',
  );
  assert.deepEqual(seen.problems, []);
  await page.screenshot({ path: '/tmp/svc-playground-in-browser-webgpu.png', fullPage: true });
  await page.close();
});

test('model files: only files of a downloaded model; unknown file, model or a path out of the folder is 404', async () => {
  const list = await (await fetch(`${srv.url}/svc/v1/model-files/tiny-llama:test`)).json() as {
    repo: string;
    dtype: string;
    files: { path: string; size: number }[];
  };
  assert.equal(list.repo, 'svc-test/tiny-llama');
  assert.equal(list.dtype, 'fp32');
  const config = list.files.find((f) => f.path === 'config.json')!;
  const res = await fetch(`${srv.url}/svc/v1/model-files/svc-test/tiny-llama/resolve/main/config.json`);
  assert.equal(res.status, 200);
  assert.equal((await res.arrayBuffer()).byteLength, config.size);
  for (
    const p of [
      'svc-test/tiny-llama/resolve/main/nope.json',
      'svc-test/tiny-whisper/resolve/main/config.json',
      'svc-test/tiny-llama/resolve/main/..%2F..%2F.manifests%2Fsvc-test%2Ftiny-llama%2Ffp32.json',
      '.manifests/svc-test/resolve/main/tiny-llama',
      'tiny-whisper:test',
    ]
  ) {
    const r = await fetch(`${srv.url}/svc/v1/model-files/${p}`);
    assert.equal(r.status, 404, p);
    assert.equal(((await r.json()) as { error: string }).error, 'not_found');
  }
});

test("once keys exist, model files need one (the page sends its key through transformers.js' fetch); /vendor/ stays public", async () => {
  const { token } = await srv.keys.create({ name: 'browser-user', role: 'user' });
  const file = `${srv.url}/svc/v1/model-files/svc-test/tiny-llama/resolve/main/config.json`;
  assert.equal((await fetch(file)).status, 401);
  assert.equal((await fetch(file, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  const vendor = await fetch(`${srv.url}/vendor/ort/dist/ort-wasm-simd-threaded.asyncify.wasm`);
  assert.equal(vendor.status, 200);
  assert.equal(vendor.headers.get('content-type'), 'application/wasm');
  for (
    const p of [
      '/vendor/ort/package.json',
      '/vendor/ort/dist/../package.json',
      '/vendor/pdfjs/types/src/pdf.d.ts',
      '/vendor/nope/dist/x.js',
    ]
  ) assert.equal((await fetch(`${srv.url}${p}`)).status, 404, p);

  const browser = await launch(['--disable-gpu']);
  const page = await browser.newPage();
  await page.goto(`${srv.url}/playground.html`);
  await page.fill('#api-key', token);
  await page.dispatchEvent('#api-key', 'change');
  const prompt = 'A key was given';
  const r = await runBoth(page, prompt, 12);
  assert.match(r.backend, /^\(wasm/);
  assert.equal(r.browser, r.server);
  await page.close();
});
