/**
 * The runtime suite: the real server started on Node (the built bundle), Deno and Bun, one after the
 * other on the same data directory, must give the same answers; and the compiled single binary serves alone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type HubStandIn, startFixtureHub } from '../support/hub-stand-in.ts';
import { launchChromium } from '../support/chromium.ts';
import { listening } from '../support/server.ts';
import { buildBundle, ONE_PAGE_PDF as PDF, ROOT, RUNTIMES, start } from '../support/runtime-process.ts';
import { bytes, speechSilenceSpeech, video } from '../routes/media/make-media.ts';

interface Answer {
  status: number;
  body: string;
  node: string | null;
}

async function probe(url: string, token: string): Promise<Record<string, Answer>> {
  const ask = async (path: string, init?: RequestInit): Promise<Answer> => {
    const r = await fetch(url + path, init);
    return { status: r.status, body: await r.text(), node: r.headers.get('x-svc-node') };
  };
  const auth = { authorization: `Bearer ${token}` };
  const fd = new FormData();
  fd.append('file', new Blob(['same bytes everywhere'], { type: 'text/plain' }), 'same.txt');
  const upload = await fetch(`${url}/svc/v1/files/upload`, { method: 'POST', body: fd, headers: auth });
  const file = await upload.json();
  return {
    version: await ask('/api/version'),
    health: await ask('/health'),
    notFoundA: await ask('/v1/nope', { headers: auth }),
    notFoundB: await ask('/api/nope', { headers: auth }),
    notFoundN: await ask('/svc/v1/nope', { headers: auth }),
    badJson: await ask('/svc/v1/admin/keys', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"name":',
    }),
    invalid: await ask('/svc/v1/admin/keys', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"name":7}',
    }),
    missingKey: await ask('/api/tags'),
    badKey: await ask('/v1/models', { headers: { authorization: 'Bearer svc_unknown' } }),
    uploaded: { status: upload.status, body: String(file.bytes), node: upload.headers.get('x-svc-node') },
    content: await ask(`/svc/v1/files/${file.fileId}/content`, { headers: auth }),
    pdfInfo: await ask('/svc/v1/pdf-info', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input_format: 'Base64EncodedFile', file: Buffer.from(PDF).toString('base64') }),
    }),
    pull: await ask('/api/pull', { method: 'POST', headers: auth, body: JSON.stringify({ model: MODEL, stream: false }) }),
    generate: await generated(url, auth),
    ...(await media(url, auth)),
    responsesWs: await responsesOverWebSocket(url, token),
    responsesWsNoKey: await responsesOverWebSocket(url, ''),
  };
}

/** WebSocket mode of /v1/responses: the upgrade status, then each event type and the greedy text. */
async function responsesOverWebSocket(url: string, token: string): Promise<Answer> {
  const { WebSocket } = await import('ws');
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/responses`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return new Promise((resolve) => {
    const types: string[] = [];
    ws.on(
      'unexpected-response',
      (_req, res) => resolve({ status: res.statusCode ?? 0, body: '', node: String(res.headers['x-svc-node'] ?? '') || null }),
    );
    ws.on(
      'open',
      () =>
        ws.send(
          JSON.stringify({
            type: 'response.create',
            model: MODEL,
            input: 'Hello there',
            temperature: 0,
            max_output_tokens: 6,
            store: false,
          }),
        ),
    );
    ws.on('message', (data) => {
      const e = JSON.parse(String(data));
      types.push(e.type);
      if (e.type === 'response.completed' || e.type === 'response.incomplete' || e.type === 'error') {
        ws.close();
        const text = e.response?.output?.[0]?.content?.[0]?.text ?? e.error?.message;
        resolve({ status: 101, body: JSON.stringify([types, text]), node: null });
      }
    });
    ws.on('error', () => {});
  });
}

const MODEL = 'hf.co/svc-test/tiny-llama:fp32';
const WHISPER = 'hf.co/svc-test/tiny-whisper';

// Media made once by espeak-ng, sox and ffmpeg: speech, silence, speech; a 3 s H.264 clip with that sound.
let speechWav: Uint8Array, clip: Uint8Array;
function mediaFixtures() {
  const s = speechSilenceSpeech();
  speechWav = bytes(s.path);
  clip = bytes(video('rt-clip.mp4', 3, s.path));
}

/** Voice activity detection, one video frame (headers and bytes) and a transcription on the Whisper fixture. */
async function media(url: string, auth: Record<string, string>): Promise<Record<string, Answer>> {
  const json = { ...auth, 'content-type': 'application/json' };
  const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
  const vad = await fetch(`${url}/svc/v1/voice-activity-detection`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ input_format: 'Base64EncodedFile', file: b64(speechWav) }),
  });
  const fd = new FormData();
  fd.append('file', new Blob([clip as Uint8Array<ArrayBuffer>], { type: 'video/mp4' }), 'clip.mp4');
  const up = await (await fetch(`${url}/svc/v1/files/upload`, { method: 'POST', body: fd, headers: auth })).json();
  const f = await fetch(`${url}/svc/v1/video-frames/${up.fileId}?at=1.5&format=png`, { headers: auth });
  const headers = [...f.headers].filter(([k]) => k.startsWith('x-video-') || k.startsWith('x-frame-') || k === 'content-type').sort();
  const digest = Buffer.from(await crypto.subtle.digest('SHA-256', await f.arrayBuffer())).toString('hex');
  await fetch(`${url}/api/pull`, { method: 'POST', headers: auth, body: JSON.stringify({ model: WHISPER, stream: false }) });
  const tr = await fetch(`${url}/svc/v1/audio-transcription`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ input_format: 'Base64EncodedFile', file: b64(speechWav), model: WHISPER, language: 'en' }),
  });
  return {
    vad: { status: vad.status, body: await vad.text(), node: vad.headers.get('x-svc-node') },
    frame: { status: f.status, body: JSON.stringify([headers, digest]), node: f.headers.get('x-svc-node') },
    transcription: { status: tr.status, body: await tr.text(), node: tr.headers.get('x-svc-node') },
  };
}
// A 1×1 PNG.
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==';

/** Greedy text only: the timing fields of the answer differ from run to run. */
async function generated(url: string, auth: Record<string, string>): Promise<Answer> {
  const r = await fetch(`${url}/api/generate`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model: MODEL, prompt: 'Hello there', stream: false, options: { temperature: 0, num_predict: 12 } }),
  });
  const body = await r.json();
  return { status: r.status, body: JSON.stringify([body.response, body.eval_count, body.done_reason]), node: r.headers.get('x-svc-node') };
}

describe('the same server on Node, Deno and Bun', () => {
  let dataDir: string;
  let token: string;
  let hub: HubStandIn;
  before(async () => {
    hub = await startFixtureHub();
    mediaFixtures();
    buildBundle();
    dataDir = await mkdtemp(join(tmpdir(), 'svc-rt-'));
    const k = spawnSync(process.execPath, [join(ROOT, 'dist/main.mjs'), 'keys', 'create', '--name', 'rt', '--data-dir', dataDir], {
      encoding: 'utf8',
    });
    assert.equal(k.status, 0, k.stderr);
    token = JSON.parse(k.stdout).token;
  });
  // Closed whatever the outcome: a live server would keep this file's process, and CI, waiting.
  after(() => hub?.close());

  test('same status, body and X-Svc-Node for the same requests', async () => {
    const answers: Record<string, Record<string, Answer>> = {};
    const runtimeOf: Record<string, string> = {};
    for (const [name, cmd] of Object.entries(RUNTIMES)) {
      const [c, a] = cmd(['--port', '0', '--data-dir', dataDir, '--hub-url', hub.url, '--hub-allowed-hosts', 'hf.co']);
      const srv = await start(c, a);
      try {
        runtimeOf[name] = srv.runtime;
        answers[name] = await probe(srv.url, token);
      } finally {
        await srv.stop();
      }
    }
    assert.deepEqual(runtimeOf, { node: 'node', deno: 'deno', bun: 'bun' }, 'each start command runs its own runtime');
    const node = answers.node;
    assert.equal(node.version.status, 200);
    assert.equal(node.badJson.status, 400);
    assert.equal(node.invalid.status, 400);
    assert.equal(node.missingKey.status, 401);
    assert.equal(node.badKey.status, 401);
    assert.equal(node.notFoundA.status, 404);
    assert.equal(node.content.body, 'same bytes everywhere');
    assert.match(node.version.node ?? '', /^[a-z0-9]{6}$/);
    assert.equal(JSON.parse(node.pdfInfo.body).page_count, 1);
    assert.equal(node.generate.status, 200);
    assert.equal(JSON.parse(node.generate.body)[1], 12, 'twelve tokens generated');
    const [wsTypes] = JSON.parse(node.responsesWs.body);
    assert.equal(wsTypes[0], 'response.created');
    assert.equal(wsTypes.at(-1), 'response.incomplete', 'six tokens, cut by max_output_tokens');
    assert.equal(node.responsesWsNoKey.status, 401, 'the upgrade needs a key like any route');
    assert.equal(node.vad.status, 200, node.vad.body);
    assert.equal(JSON.parse(node.vad.body).segments.length, 2, 'speech, silence, speech');
    assert.equal(node.frame.status, 200);
    assert.match(node.frame.body, /"x-video-width","320"/);
    assert.equal(node.transcription.status, 200, node.transcription.body);
    assert.ok(JSON.parse(node.transcription.body).text.length > 0, 'the fixture writes tokens');
    for (const rt of ['deno', 'bun']) {
      for (const [k, v] of Object.entries(answers[rt])) {
        const body = (s: string) => s.replace(/"instance":"[^"]*"/, '');
        assert.deepEqual({ ...v, body: body(v.body) }, { ...node[k], body: body(node[k].body) }, `${rt} ${k}`);
      }
    }
    nativeGenerate = node.generate.body;
  });

  let nativeGenerate: string | undefined;
  test('--backend wasm: the greedy text of native Node on each runtime, /health answering while it generates', async () => {
    assert.ok(nativeGenerate, 'the native answer of the test above');
    const auth = { authorization: `Bearer ${token}` };
    for (const [name, cmd] of Object.entries(RUNTIMES)) {
      const [c, a] = cmd(['--port', '0', '--data-dir', dataDir, '--hub-url', hub.url, '--hub-allowed-hosts', 'hf.co', '--backend', 'wasm']);
      const srv = await start(c, a);
      try {
        const ps = async () => (await (await fetch(`${srv.url}/api/ps`, { headers: auth })).json()).models[0]?.backend?.device;
        await generated(srv.url, auth); // pulled above: loads the model on WASM
        assert.equal(await ps(), 'wasm', name);
        let generating = true;
        const gen = generated(srv.url, auth).finally(() => (generating = false));
        const lat: number[] = [];
        while (generating) {
          const t0 = performance.now();
          await (await fetch(`${srv.url}/health`)).arrayBuffer();
          lat.push(performance.now() - t0);
          await new Promise((r) => setTimeout(r, 5));
        }
        assert.equal((await gen).body, nativeGenerate, `${name}: greedy text on WASM`);
        assert.ok(Math.max(...lat) < 250, `${name}: /health took up to ${Math.max(...lat).toFixed(0)} ms during generation`);
      } finally {
        await srv.stop();
      }
    }
  });
});

test('the compiled single binary serves alone from an empty folder', async () => {
  const c = spawnSync(process.execPath, ['scripts/compile.mjs', 'dist/svc-test'], { cwd: ROOT, stdio: 'inherit' });
  assert.equal(c.status, 0, 'bun build --compile works');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bin-'));
  const exe = join(dir, 'svc');
  await copyFile(join(ROOT, 'dist/svc-test'), exe);
  spawnSync('chmod', ['+x', exe]);
  const data = join(dir, 'data');
  const k = spawnSync(exe, ['keys', 'create', '--name', 'bin', '--data-dir', data], { cwd: dir, encoding: 'utf8' });
  assert.equal(k.status, 0, k.stderr);
  const key = JSON.parse(k.stdout);
  const list = spawnSync(exe, ['keys', 'list', '--data-dir', data], { cwd: dir, encoding: 'utf8' });
  assert.equal(JSON.parse(list.stdout)[0].id, key.id, 'the key is stored and read back');
  const srv = await start(exe, ['--port', '0', '--data-dir', data], dir);
  try {
    const v = await fetch(`${srv.url}/api/version`);
    assert.equal(v.status, 200);
    assert.match((await v.json()).version, /^\d{4}\.\d+\.\d+$/);
    assert.equal((await fetch(`${srv.url}/svc/v1/admin/keys`)).status, 401, 'the stored key is required');
    const ok = await fetch(`${srv.url}/svc/v1/admin/keys`, { headers: { authorization: `Bearer ${key.token}` } });
    assert.equal(ok.status, 200);
    const page = await fetch(`${srv.url}/`, { headers: { accept: 'text/html' } });
    assert.match(await page.text(), /<title>svc/);
    // PDF tasks run on the embedded WASM codecs; what needs a native addon answers 501, never 500.
    const auth = { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' };
    const pdf = { input_format: 'Base64EncodedFile', file: Buffer.from(PDF).toString('base64') };
    const info = await fetch(`${srv.url}/svc/v1/pdf-info`, { method: 'POST', headers: auth, body: JSON.stringify(pdf) });
    assert.equal((await info.json()).page_count, 1);
    const png = await fetch(`${srv.url}/svc/v1/pdf-to-images`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ ...pdf, format: 'png' }),
    });
    assert.equal(png.headers.get('content-type'), 'image/png');
    assert.deepEqual([...new Uint8Array(await png.arrayBuffer()).slice(1, 4)], [0x50, 0x4e, 0x47]);
    const ocr = await fetch(`${srv.url}/svc/v1/ocr`, { method: 'POST', headers: auth, body: JSON.stringify({ ...pdf, file: PNG_1PX }) });
    assert.equal(ocr.status, 501);
    assert.equal((await ocr.json()).error, 'capability_unavailable');
    // Media through the system ffmpeg, Silero's weights and ONNX Runtime's WASM embedded in the binary.
    if (!speechWav) mediaFixtures();
    const m = await media(srv.url, { authorization: `Bearer ${key.token}` });
    assert.equal(m.vad.status, 200, m.vad.body);
    assert.equal(JSON.parse(m.vad.body).segments.length, 2, 'speech, silence, speech');
    assert.equal(m.frame.status, 200, m.frame.body);
    assert.match(m.frame.body, /"x-video-width","320"/);
  } finally {
    await srv.stop();
  }
  // Without a system ffmpeg the binary has no media tool (ffmpeg's WASM core is not embedded): 501 by name.
  const bare = await start(exe, ['--port', '0', '--data-dir', data, '--ffmpeg-path', join(dir, 'no-ffmpeg')], dir);
  try {
    const auth = { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' };
    const body = JSON.stringify({
      input_format: 'Base64EncodedFile',
      file: Buffer.from(speechWav).toString('base64'),
      model: 'whisper:tiny',
    });
    for (const path of ['/svc/v1/voice-activity-detection', '/svc/v1/audio-transcription']) {
      const r = await fetch(`${bare.url}${path}`, { method: 'POST', headers: auth, body });
      assert.equal(r.status, 501, `${path}: ${r.status}`);
      assert.equal((await r.json()).error, 'capability_unavailable');
    }
    const caps = await (await fetch(`${bare.url}/svc/v1/video-frames/capabilities`, { headers: auth })).json();
    assert.equal(caps.media_tool_available, false);
  } finally {
    await bare.stop();
  }
});

test("the compiled binary serves the playground's /vendor/ files: byte for byte, and pdf.js previews a PDF in Chromium", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bin-vendor-'));
  const exe = join(dir, 'svc');
  await copyFile(join(ROOT, 'dist/svc-test'), exe);
  spawnSync('chmod', ['+x', exe]);
  const srv = await start(exe, ['--port', '0', '--data-dir', join(dir, 'data')], dir);
  const browser = await launchChromium();
  try {
    for (
      const [url, file] of [
        ['/vendor/pdfjs/build/pdf.min.mjs', 'pdfjs-dist/build/pdf.min.mjs'],
        ['/vendor/pdfjs/cmaps/UniJIS-UTF16-H.bcmap', 'pdfjs-dist/cmaps/UniJIS-UTF16-H.bcmap'],
        ['/vendor/transformers/dist/transformers.min.js', '@huggingface/transformers/dist/transformers.min.js'],
        ['/vendor/ort/dist/ort-wasm-simd-threaded.asyncify.wasm', 'onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm'],
      ]
    ) {
      const r = await fetch(`${srv.url}${url}`);
      assert.equal(r.status, 200, url);
      const got = new Uint8Array(await r.arrayBuffer());
      assert.ok(Buffer.from(got).equals(await readFile(join(ROOT, 'node_modules', file))), `${url}: the package's own bytes`);
    }
    assert.equal((await fetch(`${srv.url}/vendor/pdfjs/build/pdf.mjs.map`)).status, 404, 'only the listed kinds of file');
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${srv.url}/playground.html`);
    await page.setInputFiles('#pdf-file', { name: 'one.pdf', mimeType: 'application/pdf', buffer: Buffer.from(PDF) });
    await page.waitForSelector('#pdf-canvas[data-rendered="1/1"]', { timeout: 60_000 });
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await srv.stop();
  }
});

test('the compiled binary pulls a model and generates on WASM the same greedy text as native Node', async () => {
  const hub = await startFixtureHub();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bin-gen-'));
  const exe = join(dir, 'svc');
  await copyFile(join(ROOT, 'dist/svc-test'), exe);
  spawnSync('chmod', ['+x', exe]);
  const hubArgs = ['--hub-url', hub.url, '--hub-allowed-hosts', 'hf.co'];
  // fp32: quantized kernels round differently on native and WASM, and a random model's flat logits flip on that.
  const model = 'hf.co/svc-test/tiny-llama:fp32';
  const ask = async (url: string) => {
    const auth = { authorization: 'Bearer none', 'content-type': 'application/json' };
    const pulled = await fetch(`${url}/api/pull`, { method: 'POST', headers: auth, body: JSON.stringify({ model, stream: false }) });
    assert.deepEqual(await pulled.json(), { status: 'success' });
    const r = await fetch(`${url}/api/generate`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model, prompt: 'Hello there', stream: false, options: { temperature: 0, num_predict: 12 } }),
    });
    assert.equal(r.status, 200);
    const ps = await (await fetch(`${url}/api/ps`)).json();
    return { text: (await r.json()).response as string, device: ps.models[0].backend.device as string };
  };
  const bin = await start(exe, ['--port', '0', '--data-dir', join(dir, 'data'), ...hubArgs], dir);
  const native = await listening({ hubUrl: hub.url, hubAllowedHosts: ['hf.co'] });
  try {
    const fromBinary = await ask(bin.url);
    const fromNode = await ask(native.url);
    assert.equal(fromBinary.device, 'wasm');
    assert.equal(fromNode.device, 'cpu');
    assert.ok(fromBinary.text.length > 0);
    assert.equal(fromBinary.text, fromNode.text);
  } finally {
    await bin.stop();
    await native.stop();
    await hub.close();
  }
});
