// The playground: plain modules, no build step. It talks to the server's own APIs like any client would.
const $ = (id) => document.getElementById(id);
const keyInput = $('api-key');
keyInput.value = localStorage.getItem('svc-key') ?? '';
keyInput.addEventListener('change', () => { localStorage.setItem('svc-key', keyInput.value.trim()); loadModels(); });

// Signed in to the admin console? Its area ticket works here too, with the CSRF token echoed in a header.
const csrf = () => document.cookie.split(';').map((s) => s.trim()).find((s) => s.startsWith('svc-csrf='))?.slice(9);
const headers = (extra = {}) => (keyInput.value.trim() ? { ...extra, authorization: `Bearer ${keyInput.value.trim()}` } : csrf() ? { ...extra, 'x-svc-csrf': csrf() } : extra);

async function errorText(res) {
  const body = await res.json().catch(() => null);
  const e = body?.error;
  return typeof e === 'string' ? (body.message ?? e) : e?.message ?? `${res.status} ${res.statusText}`;
}

async function loadVersion() {
  const r = await fetch('/api/version');
  $('version').textContent = r.ok ? `version ${(await r.json()).version}` : 'version unavailable';
}

async function loadModels() {
  const select = $('model');
  const r = await fetch('/api/tags', { headers: headers() });
  if (!r.ok) { select.replaceChildren(new Option(await errorText(r), '')); return; }
  const { models } = await r.json();
  const chosen = select.value; // a refresh (after a pull) keeps the user's choice
  select.replaceChildren(...models.map((m) => new Option(`${m.name}${m.modified_at ? '' : ' (not downloaded)'}`, m.name)));
  if (models.some((m) => m.name === chosen)) select.value = chosen;
  const embed = $('embed-model');
  const chosenEmbed = embed.value;
  embed.replaceChildren(...models.filter((m) => m.modified_at).map((m) => new Option(m.name, m.name)));
  if (models.some((m) => m.name === chosenEmbed)) embed.value = chosenEmbed;
}

function addMessage(role, text = '') {
  const el = document.createElement('div');
  el.className = `msg ${role}`;
  el.textContent = text;
  $('transcript').append(el);
  return el;
}

const history = [];
let controller = null;

/** Reads an NDJSON response line by line. */
async function* ndjson(res) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) yield JSON.parse(line);
    }
  }
  if (buf.trim()) yield JSON.parse(buf);
}

$('chat-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const text = $('prompt').value.trim();
  const model = $('model').value;
  if (!text || !model) return;
  $('prompt').value = '';
  addMessage('user', text);
  history.push({ role: 'user', content: text });
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
  try {
    const res = await fetch('/api/chat', {
      method: 'POST', headers: headers({ 'content-type': 'application/json' }), signal: controller.signal,
      body: JSON.stringify(request),
    });
    if (!res.ok) throw new Error(await errorText(res));
    for await (const chunk of ndjson(res)) {
      if (chunk.error) throw new Error(chunk.error);
      reply += chunk.message?.content ?? '';
      out.textContent = reply;
      for (const call of chunk.message?.tool_calls ?? []) addMessage('tool', `${call.function?.name}(${JSON.stringify(call.function?.arguments ?? {})})`);
      if (chunk.done) {
        const tps = chunk.eval_count && chunk.eval_duration ? (chunk.eval_count / (chunk.eval_duration / 1e9)).toFixed(1) : '?';
        $('chat-stats').textContent = `${chunk.eval_count ?? 0} tokens, ${tps} tokens/s, stopped: ${chunk.done_reason}`;
      }
    }
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

/** The /api/chat request from the form: system prompt, parameters, schema and tools (JSON checked here first). */
function chatRequest(model) {
  const num = (id) => ($(id).value.trim() === '' ? undefined : Number($(id).value));
  const parse = (id, what) => {
    const t = $(id).value.trim();
    if (!t) return undefined;
    try { return JSON.parse(t); } catch { throw new Error(`${what} is not valid JSON`); }
  };
  const system = $('system').value.trim();
  const options = Object.fromEntries(Object.entries({ temperature: num('temperature'), top_p: num('top-p'), num_predict: num('max-tokens'), seed: num('seed') }).filter(([, v]) => v !== undefined));
  const format = parse('schema', 'the schema');
  const tools = parse('tools', 'the tools');
  return {
    model, stream: true, options,
    messages: system ? [{ role: 'system', content: system }, ...history] : history,
    ...(format ? { format } : {}), ...(tools ? { tools } : {}),
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

$('pdf-op').addEventListener('change', () => { $('pdf-query').hidden = $('pdf-op').value !== 'pdf-search'; });

$('pdf-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const file = $('pdf-file').files[0];
  if (!file) return;
  const op = $('pdf-op').value;
  const form = new FormData();
  form.append('file', file);
  if (op === 'pdf-to-images') { form.append('pages', '1'); form.append('format', 'png'); form.append('dpi', '72'); }
  if (op === 'pdf-search') form.append('query', $('pdf-query').value);
  const result = $('pdf-result');
  result.textContent = 'working…';
  const res = await fetch(`/svc/v1/${op}`, { method: 'POST', headers: headers(), body: form });
  if (!res.ok) { result.textContent = await errorText(res); return; }
  if ((res.headers.get('content-type') ?? '').startsWith('image/')) {
    const img = document.createElement('img');
    img.alt = 'first page';
    img.src = URL.createObjectURL(await res.blob());
    result.replaceChildren(img);
  } else {
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify(await res.json(), null, 2);
    result.replaceChildren(pre);
  }
});

$('doc-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const file = $('doc-file').files[0];
  if (!file) return;
  const form = new FormData();
  form.append('file', file);
  $('doc-status').textContent = 'converting…';
  $('doc-result').hidden = true;
  const res = await fetch('/svc/v1/document-to-markdown', { method: 'POST', headers: headers(), body: form });
  if (!res.ok) { $('doc-status').textContent = await errorText(res); return; }
  if (res.status === 202) { $('doc-status').textContent = `running as a job: ${(await res.json()).job_id}`; return; }
  const r = await res.json();
  $('doc-status').textContent = `${r.format}, ${r.page_count ?? '?'} page(s)${r.ocr_pages?.length ? `, OCR on ${r.ocr_pages.length}` : ''}`;
  $('doc-result').textContent = r.markdown;
  $('doc-result').hidden = false;
});

$('embed-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const res = await fetch('/api/embed', { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify({ model: $('embed-model').value, input: $('embed-text').value }) });
  $('embed-result').hidden = false;
  if (!res.ok) { $('embed-result').textContent = await errorText(res); return; }
  const v = (await res.json()).embeddings[0];
  $('embed-result').textContent = `${v.length} dimensions: [${v.slice(0, 8).map((x) => x.toFixed(4)).join(', ')}, …]`;
});

loadVersion();
loadModels();
