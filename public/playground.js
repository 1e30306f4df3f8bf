// The playground: plain modules, no build step. It talks to the server's own APIs like any client would.
const $ = (id) => document.getElementById(id);
const keyInput = $('api-key');
keyInput.value = localStorage.getItem('svc-key') ?? '';
keyInput.addEventListener('change', () => { localStorage.setItem('svc-key', keyInput.value.trim()); loadModels(); });

const headers = (extra = {}) => (keyInput.value.trim() ? { ...extra, authorization: `Bearer ${keyInput.value.trim()}` } : extra);

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
  const out = addMessage('assistant');
  controller = new AbortController();
  $('send').disabled = true;
  $('stop').disabled = false;
  let reply = '';
  try {
    const res = await fetch('/api/chat', {
      method: 'POST', headers: headers({ 'content-type': 'application/json' }), signal: controller.signal,
      body: JSON.stringify({ model, messages: history, stream: true, options: { num_predict: 128 } }),
    });
    if (!res.ok) throw new Error(await errorText(res));
    for await (const chunk of ndjson(res)) {
      if (chunk.error) throw new Error(chunk.error);
      reply += chunk.message?.content ?? '';
      out.textContent = reply;
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

loadVersion();
loadModels();
