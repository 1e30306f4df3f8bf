// The playground: plain modules, no build step. It talks to the server's own APIs like any client would.
import { $, csrfToken, errorText, ndjson, showVersion, sse } from '/common.js';

const keyInput = $('api-key');
keyInput.value = localStorage.getItem('svc-key') ?? '';
keyInput.addEventListener('change', () => { localStorage.setItem('svc-key', keyInput.value.trim()); loadModels(); });

// Signed in to the admin console? Its area ticket works here too, with the CSRF token echoed in a header.
const headers = (extra = {}) => (keyInput.value.trim() ? { ...extra, authorization: `Bearer ${keyInput.value.trim()}` } : csrfToken() ? { ...extra, 'x-svc-csrf': csrfToken() } : extra);

async function loadModels() {
  capabilities.clear(); // a pulled model may say more about itself than its catalog entry did
  const select = $('model');
  const r = await fetch('/api/tags', { headers: headers() });
  if (!r.ok) { select.replaceChildren(new Option(await errorText(r), '')); return; }
  const { models } = await r.json();
  const chosen = select.value; // a refresh (after a pull) keeps the user's choice
  select.replaceChildren(...models.map((m) => new Option(`${m.name}${m.modified_at ? '' : ' (not downloaded)'}`, m.name)));
  if (models.some((m) => m.name === chosen)) select.value = chosen;
  const shown = select.value;
  // the other panels list the downloaded models of their kind (the model-files listing names the kind)
  const downloaded = await Promise.all(models.filter((m) => m.modified_at).map(async (m) => {
    const r = await fetch(`/svc/v1/model-files/${encodeURIComponent(m.name)}`, { headers: headers() });
    return { name: m.name, kind: r.ok ? (await r.json()).kind : undefined };
  }));
  const ofKind = (kind) => downloaded.filter((m) => m.kind === kind).map((m) => m.name);
  fillModels($('embed-model'), ofKind('embedding'));
  fillModels($('asr-model'), ofKind('speech'));
  fillModels($('local-model'), ofKind('generation'));
  // no choice made yet: chat with a downloaded generation model, one that can answer now
  if (!models.some((m) => m.name === chosen) && select.value === shown && ofKind('generation').length) select.value = ofKind('generation')[0];
}

function fillModels(select, names) {
  const chosen = select.value;
  select.replaceChildren(...(names.length ? names.map((n) => new Option(n, n)) : [new Option('(pull a model of this kind first)', '')]));
  select.value = names.includes(chosen) ? chosen : names[0] ?? '';
}

function addMessage(role, text = '', images = []) {
  const msg = document.createElement('div');
  msg.className = `msg ${role}`;
  for (const src of images) msg.append(Object.assign(document.createElement('img'), { src, alt: 'attached image', className: 'thumb' }));
  if (images.length) msg.append(document.createElement('br'));
  msg.append(text);
  $('transcript').append(msg);
  return msg;
}

const history = [];
let controller = null;

// ---- images for vision models: attached by the file picker, a paste into the prompt, or a drop on the chat
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
let attached = []; // data: URLs of the images going with the next message
const capabilities = new Map(); // model name → its capabilities (from /api/show)

async function modelCapabilities(model) {
  if (!capabilities.has(model)) {
    const r = await fetch('/api/show', { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify({ model }) });
    if (!r.ok) return [];
    capabilities.set(model, (await r.json()).capabilities ?? []);
  }
  return capabilities.get(model);
}

const readDataUrl = (file) => new Promise((resolve, reject) => {
  const reader = new FileReader();
  reader.onload = () => resolve(reader.result);
  reader.onerror = () => reject(reader.error);
  reader.readAsDataURL(file);
});

function showAttachments(note = '') {
  $('attachments').replaceChildren(...attached.map((src, i) => {
    const remove = Object.assign(document.createElement('button'), { type: 'button', className: 'small', textContent: '×', title: 'remove this image' });
    remove.addEventListener('click', () => { attached.splice(i, 1); showAttachments(); });
    const item = Object.assign(document.createElement('span'), { className: 'attachment' });
    item.append(Object.assign(document.createElement('img'), { src, alt: 'image to send', className: 'thumb' }), remove);
    return item;
  }));
  $('attach-status').textContent = note;
}

/** Attaches image files when the chosen model reads images; otherwise says why not. */
async function attachImages(files) {
  const images = [...files].filter((f) => f.type.startsWith('image/'));
  if (!images.length) { showAttachments(files.length ? 'only images can be attached' : ''); return; }
  const model = $('model').value;
  if (!(await modelCapabilities(model)).includes('vision')) {
    showAttachments(`${model || 'this model'} does not read images (no vision capability): choose a vision model, such as smolvlm:256m, to send one`);
    return;
  }
  const big = images.find((f) => f.size > MAX_IMAGE_BYTES);
  if (big) { showAttachments(`${big.name} is larger than 20 MiB`); return; }
  attached.push(...(await Promise.all(images.map(readDataUrl))));
  showAttachments(`${attached.length} image(s) go with the next message`);
}

$('attach').addEventListener('click', () => $('image-file').click());
$('image-file').addEventListener('change', () => { attachImages($('image-file').files); $('image-file').value = ''; });
$('prompt').addEventListener('paste', (ev) => {
  const files = ev.clipboardData?.files;
  if (files?.length) { ev.preventDefault(); attachImages(files); }
});
const chatPanel = $('chat-panel');
chatPanel.addEventListener('dragover', (ev) => { if (ev.dataTransfer?.types.includes('Files')) { ev.preventDefault(); chatPanel.classList.add('over'); } });
chatPanel.addEventListener('dragleave', () => chatPanel.classList.remove('over'));
chatPanel.addEventListener('drop', (ev) => {
  if (!ev.dataTransfer?.files?.length) return;
  ev.preventDefault();
  chatPanel.classList.remove('over');
  attachImages(ev.dataTransfer.files);
});
$('model').addEventListener('change', async () => {
  if (attached.length && !(await modelCapabilities($('model').value)).includes('vision')) {
    showAttachments(`${$('model').value} does not read images: the attached image(s) will not be sent to it`);
  }
});

// ---- the conversation, streamed from /v1/chat/completions
$('chat-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const text = $('prompt').value.trim();
  const model = $('model').value;
  if (!text || !model) return;
  const images = attached;
  if (images.length && !(await modelCapabilities(model)).includes('vision')) {
    showAttachments(`${model} does not read images (no vision capability): remove the image(s) or choose a vision model`);
    return;
  }
  $('prompt').value = '';
  attached = [];
  showAttachments();
  addMessage('user', text, images);
  history.push({ role: 'user', content: images.length ? [...images.map((url) => ({ type: 'image_url', image_url: { url } })), { type: 'text', text }] : text });
  let request;
  try {
    request = chatRequest(model);
  } catch (e) {
    addMessage('assistant error', e.message);
    return;
  }
  const out = addMessage('assistant');
  controller = new AbortController();
  $('send').disabled = true;
  $('stop').disabled = false;
  let reply = '';
  const calls = [];
  let finish = null;
  let usage = null;
  let first = 0;
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST', headers: headers({ 'content-type': 'application/json' }), signal: controller.signal,
      body: JSON.stringify(request),
    });
    if (!res.ok) throw new Error(await errorText(res));
    for await (const { data } of sse(res)) {
      if (data === '[DONE]') break;
      if (data.error) throw new Error(data.error.message ?? String(data.error));
      usage = data.usage ?? usage;
      const choice = data.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta ?? {};
      if (delta.content) {
        first ||= performance.now();
        reply += delta.content;
        out.textContent = reply;
      }
      // tool calls stream as fragments keyed by index: the name first, then pieces of the arguments
      for (const c of delta.tool_calls ?? []) {
        first ||= performance.now();
        const call = (calls[c.index ?? 0] ??= { name: '', arguments: '', node: addMessage('tool') });
        call.name += c.function?.name ?? '';
        call.arguments += c.function?.arguments ?? '';
        call.node.textContent = `${call.name}(${call.arguments})`;
      }
      finish = choice.finish_reason ?? finish;
    }
    const tokens = usage?.completion_tokens ?? 0;
    const seconds = first ? (performance.now() - first) / 1000 : 0;
    $('chat-stats').textContent = `${tokens} tokens, ${seconds > 0 ? (tokens / seconds).toFixed(1) : '?'} tokens/s, stopped: ${finish ?? '?'}`;
    history.push({ role: 'assistant', content: reply });
  } catch (e) {
    if (e.name !== 'AbortError') { out.classList.add('error'); out.textContent = e.message; }
  } finally {
    controller = null;
    $('send').disabled = false;
    $('stop').disabled = true;
  }
});
$('stop').addEventListener('click', () => controller?.abort());

/** The /v1/chat/completions request from the form: system prompt, parameters, schema and tools (JSON checked here first). */
function chatRequest(model) {
  const num = (id) => ($(id).value.trim() === '' ? undefined : Number($(id).value));
  const parse = (id, what) => {
    const t = $(id).value.trim();
    if (!t) return undefined;
    try { return JSON.parse(t); } catch { throw new Error(`${what} is not valid JSON`); }
  };
  const system = $('system').value.trim();
  const params = Object.fromEntries(Object.entries({ temperature: num('temperature'), top_p: num('top-p'), max_tokens: num('max-tokens'), seed: num('seed') }).filter(([, v]) => v !== undefined));
  const schema = parse('schema', 'the schema');
  const tools = parse('tools', 'the tools');
  return {
    model, stream: true, stream_options: { include_usage: true }, ...params,
    messages: system ? [{ role: 'system', content: system }, ...history] : history,
    ...(schema ? { response_format: { type: 'json_schema', json_schema: { name: 'reply', schema } } } : {}), ...(tools ? { tools } : {}),
  };
}

$('pull').addEventListener('click', async () => {
  const model = $('model').value;
  if (!model) return;
  $('pull-status').textContent = 'pulling…';
  const res = await fetch('/api/pull', { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify({ model }) });
  if (!res.ok) { $('pull-status').textContent = await errorText(res); return; }
  for await (const p of ndjson(res)) {
    if (p.error) { $('pull-status').textContent = p.error; return; }
    $('pull-status').textContent = p.total ? `${p.status} ${Math.round((100 * (p.completed ?? 0)) / p.total)}%` : p.status;
  }
  loadModels();
});

$('pdf-op').addEventListener('change', () => {
  const op = $('pdf-op').value;
  $('pdf-query').hidden = op !== 'pdf-search' && op !== 'pdf-watermark';
  $('pdf-query').placeholder = op === 'pdf-watermark' ? 'watermark text' : 'search text';
});

// The chosen PDF is previewed at once, in the page, by pdf.js; a PDF that an operation returns replaces it.
$('pdf-file').addEventListener('change', () => {
  const file = $('pdf-file').files[0];
  if (file) file.arrayBuffer().then((b) => previewPdf(new Uint8Array(b), file.name, null)).catch((e) => { $('pdf-result').textContent = e.message; });
});

$('pdf-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const file = $('pdf-file').files[0];
  if (!file) return;
  const op = $('pdf-op').value;
  const form = new FormData();
  form.append('file', file);
  if (op === 'pdf-to-images') { form.append('pages', '1'); form.append('format', 'png'); form.append('dpi', '72'); }
  if (op === 'pdf-search') form.append('query', $('pdf-query').value);
  if (op === 'pdf-watermark') form.append('text', $('pdf-query').value || 'DRAFT');
  if (op === 'rotate') form.append('operations', JSON.stringify([{ op: 'rotate', degrees: 90 }]));
  const result = $('pdf-result');
  result.textContent = 'working…';
  const res = await fetch(`/svc/v1/${op === 'rotate' ? 'pdf-edit' : op}`, { method: 'POST', headers: headers(), body: form });
  if (!res.ok) { result.textContent = await errorText(res); return; }
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('image/')) {
    const img = document.createElement('img');
    img.alt = 'first page';
    img.src = URL.createObjectURL(await res.blob());
    result.replaceChildren(img);
  } else if (type.startsWith('application/pdf')) {
    const bytes = new Uint8Array(await res.arrayBuffer());
    result.textContent = `${op === 'rotate' ? 'rotated' : 'watermarked'} PDF, ${bytes.length} bytes: preview below`;
    const blob = new Blob([bytes], { type: 'application/pdf' });
    await previewPdf(bytes, `result of ${op}`, blob).catch((e) => {
      result.replaceChildren(`${op === 'rotate' ? 'rotated' : 'watermarked'} PDF, ${bytes.length} bytes; no preview: ${e.message} `);
      result.append(Object.assign(document.createElement('a'), { href: URL.createObjectURL(blob), download: 'result.pdf', textContent: 'download' }));
    });
  } else {
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify(await res.json(), null, 2);
    result.replaceChildren(pre);
  }
});

/** A browser library served from /vendor/; a server without it gets a sentence saying which feature is missing. */
async function vendorModule(url, feature) {
  try {
    return await import(url);
  } catch (e) {
    const head = await fetch(url, { method: 'HEAD' }).catch(() => null);
    if (head && !head.ok) throw new Error(`${feature} is not available: this server does not serve ${url} (${head.status})`);
    throw e;
  }
}

let pdfjs = null;
const viewer = { doc: null, page: 1 };

/** pdf.js and its worker come from our own origin (/vendor/pdfjs/, served from node_modules): no CDN. */
async function loadPdfjs() {
  if (!pdfjs) {
    pdfjs = await vendorModule('/vendor/pdfjs/build/pdf.min.mjs', 'the in-page PDF preview (pdf.js)');
    pdfjs.GlobalWorkerOptions.workerSrc = '/vendor/pdfjs/build/pdf.worker.min.mjs';
  }
  return pdfjs;
}

async function previewPdf(bytes, title, downloadBlob) {
  const lib = await loadPdfjs();
  const doc = await lib.getDocument({
    data: bytes, isEvalSupported: false,
    cMapUrl: '/vendor/pdfjs/cmaps/', cMapPacked: true, standardFontDataUrl: '/vendor/pdfjs/standard_fonts/', wasmUrl: '/vendor/pdfjs/wasm/',
  }).promise;
  await viewer.doc?.destroy();
  viewer.doc = doc;
  viewer.page = 1;
  $('pdf-viewer-title').textContent = title;
  const link = $('pdf-download');
  if (link.href) URL.revokeObjectURL(link.href);
  link.hidden = !downloadBlob;
  if (downloadBlob) link.href = URL.createObjectURL(downloadBlob);
  $('pdf-viewer').hidden = false;
  await renderPdfPage();
}

async function renderPdfPage() {
  const doc = viewer.doc;
  const page = await doc.getPage(viewer.page);
  const base = page.getViewport({ scale: 1 });
  const viewport = page.getViewport({ scale: Math.min(2, 560 / Math.max(base.width, base.height)) * (window.devicePixelRatio || 1) });
  const canvas = $('pdf-canvas');
  canvas.width = Math.round(viewport.width);
  canvas.height = Math.round(viewport.height);
  canvas.style.width = `${Math.round(viewport.width / (window.devicePixelRatio || 1))}px`;
  await page.render({ canvas, canvasContext: canvas.getContext('2d'), viewport }).promise;
  $('pdf-page-label').textContent = `page ${viewer.page} of ${doc.numPages}`;
  $('pdf-prev').disabled = viewer.page <= 1;
  $('pdf-next').disabled = viewer.page >= doc.numPages;
  canvas.dataset.rendered = `${viewer.page}/${doc.numPages}`;
}
$('pdf-prev').addEventListener('click', () => { if (viewer.doc && viewer.page > 1) { viewer.page--; renderPdfPage(); } });
$('pdf-next').addEventListener('click', () => { if (viewer.doc && viewer.page < viewer.doc.numPages) { viewer.page++; renderPdfPage(); } });

// Documents: a dropped (or chosen) file goes to document-to-markdown or to OCR.
const drop = $('doc-drop');
drop.addEventListener('dragover', (ev) => { ev.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (ev) => {
  ev.preventDefault();
  drop.classList.remove('over');
  const file = ev.dataTransfer?.files?.[0];
  if (!file) return;
  const dt = new DataTransfer();
  dt.items.add(file);
  $('doc-file').files = dt.files;
  convertDocument(file);
});

$('doc-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const file = $('doc-file').files[0];
  if (file) convertDocument(file);
});

async function convertDocument(file) {
  const ocr = $('doc-action').value === 'ocr';
  const form = new FormData();
  form.append('file', file);
  $('doc-status').textContent = `${ocr ? 'reading' : 'converting'} ${file.name}…`;
  $('doc-result').hidden = true;
  const res = await fetch(ocr ? '/svc/v1/ocr' : '/svc/v1/document-to-markdown', { method: 'POST', headers: headers(), body: form });
  if (!res.ok) { $('doc-status').textContent = await errorText(res); return; }
  if (res.status === 202) { $('doc-status').textContent = `running as a job: ${(await res.json()).job_id}`; return; }
  const r = await res.json();
  if (ocr) {
    const conf = r.pages?.length ? r.pages.reduce((n, p) => n + (p.confidence ?? 0), 0) / r.pages.length : 0;
    $('doc-status').textContent = `OCR (${r.engine}), ${r.pages?.length ?? 0} page(s), mean confidence ${(100 * conf).toFixed(0)}%`;
    $('doc-result').textContent = r.text;
  } else {
    $('doc-status').textContent = `${r.format}, ${r.page_count ?? '?'} page(s)${r.ocr_pages?.length ? `, OCR on ${r.ocr_pages.length}` : ''}`;
    $('doc-result').textContent = r.markdown;
  }
  $('doc-result').hidden = false;
}

// Transcription: a file, or the microphone recorded with MediaRecorder (webm/opus; the server decodes it).
async function transcribe(blob, filename) {
  const form = new FormData();
  form.append('file', blob, filename);
  form.append('model', $('asr-model').value);
  form.append('response_format', 'verbose_json');
  $('asr-status').textContent = `transcribing ${filename} (${blob.size} bytes)…`;
  $('asr-result').hidden = true;
  const res = await fetch('/v1/audio/transcriptions', { method: 'POST', headers: headers(), body: form });
  if (!res.ok) { $('asr-status').textContent = await errorText(res); return; }
  const r = await res.json();
  $('asr-status').textContent = `${r.duration?.toFixed(2)} s of audio, language ${r.language}, ${r.segments?.length ?? 0} segment(s)`;
  $('asr-result').textContent = r.text.trim() || '(no speech found)';
  $('asr-result').hidden = false;
}

$('asr-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const file = $('asr-file').files[0];
  if (file) transcribe(file, file.name);
  else $('asr-status').textContent = 'choose an audio or video file first';
});

let recorder = null;
$('mic-start').addEventListener('click', async () => {
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (e) {
    $('mic-status').textContent = `no microphone: ${e.message}`;
    return;
  }
  const chunks = [];
  recorder = new MediaRecorder(stream);
  recorder.addEventListener('dataavailable', (e) => { if (e.data.size) chunks.push(e.data); });
  recorder.addEventListener('stop', () => {
    stream.getTracks().forEach((t) => t.stop());
    const type = recorder.mimeType || 'audio/webm';
    recorder = null;
    $('mic-status').textContent = '';
    transcribe(new Blob(chunks, { type }), `microphone.${type.includes('ogg') ? 'ogg' : type.includes('mp4') ? 'm4a' : 'webm'}`);
  });
  recorder.start(250);
  const started = performance.now();
  const tick = setInterval(() => { if (!recorder) clearInterval(tick); else $('mic-status').textContent = `recording ${((performance.now() - started) / 1000).toFixed(1)} s`; }, 200);
  $('mic-start').disabled = true;
  $('mic-stop').disabled = false;
});
$('mic-stop').addEventListener('click', () => {
  recorder?.stop();
  $('mic-start').disabled = false;
  $('mic-stop').disabled = true;
});

// In-browser inference: transformers.js (served from /vendor/, onnxruntime-web inside) loads the server's own
// copy of the model through /svc/v1/model-files/, the server standing in for the hub.
let transformers = null;
const localModels = new Map();

async function loadTransformers() {
  if (transformers) return transformers;
  const t = await vendorModule('/vendor/transformers/dist/transformers.min.js', 'in-browser inference (transformers.js)');
  t.env.allowLocalModels = false;
  t.env.useBrowserCache = false;
  t.env.remoteHost = `${location.origin}/svc/v1/model-files/`;
  t.env.remotePathTemplate = '{model}/resolve/{revision}/';
  t.env.fetch = (url, init = {}) => fetch(url, { ...init, headers: headers(Object.fromEntries(new Headers(init.headers ?? {}).entries())) });
  const wasm = t.env.backends.onnx.wasm;
  wasm.wasmPaths = `${location.origin}/vendor/ort/dist/`;
  wasm.numThreads = 1; // threads need a cross-origin-isolated page; one thread needs no SharedArrayBuffer
  wasm.proxy = false;
  transformers = t;
  return t;
}

/** WebGPU when the browser offers an adapter, else WASM. */
async function pickDevice() {
  try {
    if (navigator.gpu && (await navigator.gpu.requestAdapter())) return 'webgpu';
  } catch { /* no adapter */ }
  return 'wasm';
}

async function localModel(name) {
  if (localModels.has(name)) return localModels.get(name);
  const r = await fetch(`/svc/v1/model-files/${encodeURIComponent(name)}`, { headers: headers() });
  if (!r.ok) throw new Error(await errorText(r));
  const info = await r.json();
  const t = await loadTransformers();
  const device = await pickDevice();
  const loaded = {
    info, device,
    tokenizer: await t.AutoTokenizer.from_pretrained(info.repo),
    model: await t.AutoModelForCausalLM.from_pretrained(info.repo, { dtype: info.dtype, device }),
  };
  localModels.set(name, loaded);
  return loaded;
}

async function generateInBrowser(name, prompt, maxTokens) {
  const { tokenizer, model, device } = await localModel(name);
  const inputs = tokenizer(prompt, { add_special_tokens: true });
  const started = performance.now();
  const out = await model.generate({ ...inputs, max_new_tokens: maxTokens, do_sample: false });
  const promptLength = inputs.input_ids.dims.at(-1);
  const ids = out.tolist()[0].slice(promptLength);
  const ms = performance.now() - started;
  return { text: tokenizer.decode(ids, { skip_special_tokens: true }), device, tokens: ids.length, ms };
}

async function generateOnServer(name, prompt, maxTokens) {
  const started = performance.now();
  const res = await fetch('/v1/completions', {
    method: 'POST', headers: headers({ 'content-type': 'application/json' }),
    body: JSON.stringify({ model: name, prompt, max_tokens: maxTokens, temperature: 0 }),
  });
  if (!res.ok) throw new Error(await errorText(res));
  const r = await res.json();
  return { text: r.choices[0].text, tokens: r.usage?.completion_tokens, ms: performance.now() - started };
}

$('local-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const name = $('local-model').value;
  const prompt = $('local-prompt').value;
  const max = Number($('local-max').value) || 16;
  if (!name) { $('local-status').textContent = 'pull a text-generation model first'; return; }
  $('local-run').disabled = true;
  $('local-match').textContent = '';
  $('local-match').className = '';
  $('local-server').textContent = '…';
  $('local-browser').textContent = '…';
  $('local-backend').textContent = '';
  $('local-status').textContent = 'running on the server and loading the model in this page…';
  const [server, local] = await Promise.allSettled([generateOnServer(name, prompt, max), generateInBrowser(name, prompt, max)]);
  $('local-run').disabled = false;
  const show = (el, r) => { el.textContent = r.status === 'fulfilled' ? r.value.text : `error: ${r.reason?.message ?? r.reason}`; };
  show($('local-server'), server);
  show($('local-browser'), local);
  if (local.status === 'fulfilled') $('local-backend').textContent = `(${local.value.device}, ${local.value.tokens} tokens in ${local.value.ms.toFixed(0)} ms)`;
  $('local-status').textContent = server.status === 'fulfilled' ? `server: ${server.value.tokens ?? '?'} tokens in ${server.value.ms.toFixed(0)} ms` : '';
  if (server.status === 'fulfilled' && local.status === 'fulfilled') {
    const same = server.value.text === local.value.text;
    $('local-match').textContent = same ? 'identical greedy text' : 'the texts differ';
    $('local-match').className = same ? 'same' : 'differs';
  }
});

$('embed-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const res = await fetch('/api/embed', { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify({ model: $('embed-model').value, input: $('embed-text').value }) });
  $('embed-result').hidden = false;
  if (!res.ok) { $('embed-result').textContent = await errorText(res); return; }
  const v = (await res.json()).embeddings[0];
  $('embed-result').textContent = `${v.length} dimensions: [${v.slice(0, 8).map((x) => x.toFixed(4)).join(', ')}, …]`;
});

showVersion('version');
loadModels();
