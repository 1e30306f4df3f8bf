// The admin console: plain modules, no build step. Signed in by an area ticket (an HttpOnly cookie); every
// request echoes the ticket's CSRF token (readable cookie svc-csrf) in X-Svc-Csrf. See docs/admin-console.md.
import { $, answerError, csrfToken, el, ndjson, showVersion } from '/common.js';
import { searchViews } from '/admin-search.js';

async function api(path, { method = 'GET', body, raw = false } = {}) {
  const headers = { 'x-svc-csrf': csrfToken() || 'none' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  if (raw) return res;
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && !path.endsWith('/area-ticket')) showSignIn();
    throw answerError(res, data);
  }
  return data;
}

const td = (...c) => el('td', {}, ...c);
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
const bytes = (n) => (n == null ? '—' : n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GiB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`);
const duration = (s) => `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min ${s % 60} s`;

function notice(text, error = false) {
  const n = $('notice');
  n.textContent = text;
  n.classList.toggle('error', error);
  n.hidden = !text;
}

// ---- sign-in -------------------------------------------------------------------------------------------
function showSignIn(message = '') {
  $('console').hidden = true;
  $('logout').hidden = true;
  $('whoami').textContent = '';
  $('signin').hidden = false;
  $('signin-error').textContent = message;
}

$('signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const code = $('signin-code').value.trim();
  const body = { key: $('signin-key').value.trim() };
  if (code) body[/^\d{6}$/.test(code) ? 'code' : 'recovery_code'] = code;
  $('signin-error').textContent = '';
  try {
    await api(`/svc/v1/admin/area-ticket?persist=${$('signin-persist').checked}`, { method: 'POST', body });
    $('signin-key').value = '';
    $('signin-code').value = '';
    $('signin-code-row').hidden = true;
    await start();
  } catch (e) {
    if (e.reason === 'second_factor_required') {
      $('signin-code-row').hidden = false;
      $('signin-code').focus();
    }
    $('signin-error').textContent = e.message;
  }
});

$('logout').addEventListener('click', async () => {
  await api('/svc/v1/admin/logout', { method: 'POST' }).catch(() => {});
  showSignIn('Signed out.');
});

// ---- views ---------------------------------------------------------------------------------------------
let current = 'dashboard';
const loaders = {};
let timer = null;

function show(view) {
  current = view;
  for (const b of document.querySelectorAll('nav button')) b.classList.toggle('active', b.dataset.view === view);
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== `view-${view}`;
  notice('');
  refresh();
  clearInterval(timer);
  // the live views refresh themselves while open
  if (view === 'jobs' || view === 'dashboard') timer = setInterval(refresh, 2000);
}
function refresh() {
  loaders[current]?.().catch((e) => notice(e.message, true));
}
for (const b of document.querySelectorAll('nav button')) b.addEventListener('click', () => show(b.dataset.view));

loaders.dashboard = async () => {
  const d = await api('/svc/v1/admin/status');
  $('dash-version').textContent = d.version;
  $('dash-runtime').textContent = d.runtime;
  $('dash-node').textContent = d.node;
  $('dash-uptime').textContent = duration(d.uptime_seconds);
  $('dash-keys').textContent = String(d.keys.active);
  $('dash-active').textContent = `${d.jobs.active} (${d.jobs.active_jobs} as background jobs)`;
  $('dash-jobs').textContent = Object.entries(d.jobs.by_status).map(([k, v]) => `${k}: ${v}`).join(', ') || 'none';
  $('dash-models').replaceChildren(...(d.loaded_models.length ? d.loaded_models.map((m) => el('tr', {},
    td(m.name), td(bytes(m.size)), td(`${m.device} · ${m.runtime} · ${m.dtype}`), td(`${m.active} running, ${m.queued} queued`), td(m.expires_at ? when(m.expires_at) : 'kept'),
  )) : [el('tr', {}, el('td', { colSpan: 5, className: 'muted', textContent: 'no model loaded' }))]));
};

loaders.jobs = async () => {
  const { data } = await api('/svc/v1/admin/jobs');
  $('jobs-table').replaceChildren(...(data.length ? data.map((j) => {
    const cancel = el('button', { type: 'button', className: 'small danger cancel-job', textContent: 'Cancel' });
    cancel.dataset.id = j.job_id;
    cancel.addEventListener('click', async () => {
      cancel.disabled = true;
      try {
        await api(`/svc/v1/admin/jobs/${encodeURIComponent(j.job_id)}`, { method: 'DELETE' });
        notice(`Cancelled ${j.job_id}.`);
      } catch (e) { notice(e.message, true); }
      refresh();
    });
    const progress = j.progress_total ? `${j.progress_current ?? 0} / ${j.progress_total}` : '—';
    const row = el('tr', {}, td(el('code', { textContent: j.job_id })), td(j.owner_id), td(j.task), td(j.mode), td(when(j.started_at)), td(progress), td(cancel));
    row.dataset.owner = j.owner_id;
    return row;
  }) : [el('tr', {}, el('td', { colSpan: 7, className: 'muted', textContent: 'nothing running' }))]));
};
$('jobs-refresh').addEventListener('click', refresh);

const REACH = {
  admin: 'Reach: every route of every family, including the admin API and console sign-in; sees and cancels all jobs.',
  user: 'Reach: the model, task and file routes; its jobs, files and responses are private to it. No admin routes.',
};

loaders.keys = async () => {
  const { data } = await api('/svc/v1/admin/keys');
  $('keys-table').replaceChildren(...data.map((k) => {
    const revoke = k.revoked_at ? '' : el('button', { type: 'button', className: 'small danger', textContent: 'Revoke' });
    if (revoke) revoke.addEventListener('click', async () => {
      if (!confirm(`Revoke the key "${k.name}"? Its callers get 401 from now on.`)) return;
      try { await api(`/svc/v1/admin/keys/${encodeURIComponent(k.id)}`, { method: 'DELETE' }); } catch (e) { notice(e.message, true); }
      refresh();
    });
    const row = el('tr', {}, td(k.name), td(k.role), td(el('code', { textContent: `${k.token_prefix}…` })), td(when(k.created_at)), td(k.last_used_at ? when(k.last_used_at) : 'never'),
      td(k.revoked_at ? `revoked ${when(k.revoked_at)}` : 'active'), td(revoke));
    row.dataset.key = k.id;
    return row;
  }));
};
$('key-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  try {
    const k = await api('/svc/v1/admin/keys', { method: 'POST', body: { name: $('key-name').value.trim(), role: $('key-role').value } });
    $('key-token').textContent = k.token;
    $('key-reach').textContent = REACH[k.role] ?? '';
    $('key-reveal').hidden = false;
    $('key-name').value = '';
    refresh();
  } catch (e) { notice(e.message, true); }
});
$('key-reveal-done').addEventListener('click', () => { $('key-token').textContent = ''; $('key-reveal').hidden = true; });

async function pull(model) {
  const bar = $('pull-progress');
  const status = $('pull-status');
  bar.hidden = false;
  bar.value = 0;
  status.textContent = `pulling ${model}…`;
  $('pull-btn').disabled = true;
  try {
    const res = await api('/api/pull', { method: 'POST', body: { model, stream: true }, raw: true });
    if (!res.ok) throw new Error((await res.json().catch(() => null))?.error ?? `${res.status}`);
    for await (const p of ndjson(res)) {
      if (p.error) throw new Error(p.error);
      if (p.total) bar.value = Math.round((100 * (p.completed ?? 0)) / p.total);
      status.textContent = p.total ? `${p.status} ${bar.value}%` : p.status;
      if (p.status === 'success') bar.value = 100;
    }
  } catch (e) {
    status.textContent = `failed: ${e.message}`;
  } finally {
    $('pull-btn').disabled = false;
    loaders.models().catch(() => {});
  }
}
$('pull-form').addEventListener('submit', (ev) => { ev.preventDefault(); pull($('pull-name').value.trim()); });

loaders.models = async () => {
  const { models } = await api('/api/tags');
  $('models-table').replaceChildren(...models.map((m) => {
    const local = Boolean(m.modified_at);
    const actions = el('span', { className: 'actions' });
    const btn = (label, fn, cls = 'small') => { const b = el('button', { type: 'button', className: cls, textContent: label }); b.addEventListener('click', fn); actions.append(b); };
    if (!local) btn('Pull', () => { $('pull-name').value = m.name; pull(m.name); });
    btn('Details', async () => {
      try {
        const d = await api('/api/show', { method: 'POST', body: { model: m.name } });
        $('model-details').textContent = JSON.stringify({ name: m.name, details: d.details, capabilities: d.capabilities, model_info: d.model_info, backend: d.backend }, null, 2);
      } catch (e) { $('model-details').textContent = e.message; }
      $('model-details').hidden = false;
    });
    if (local) btn('Delete', async () => {
      if (!confirm(`Delete ${m.name} from disk?`)) return;
      try { await api('/api/delete', { method: 'DELETE', body: { model: m.name } }); notice(`Deleted ${m.name}.`); } catch (e) { notice(e.message, true); }
      refresh();
    }, 'small danger');
    const row = el('tr', {}, td(m.name), td(local ? 'downloaded' : 'in catalog'), td(local ? bytes(m.size) : '—'), td(m.details?.family ?? '—'), td(actions));
    row.dataset.model = m.name;
    return row;
  }));
};

loaders.settings = async () => {
  const [s, cfg] = await Promise.all([api('/svc/v1/admin/settings'), api('/svc/v1/admin/config')]);
  if (document.activeElement !== $('sync-timeout')) $('sync-timeout').value = s.sync_timeout_seconds;
  $('config-table').replaceChildren(...Object.entries(cfg).map(([k, v]) => el('tr', {}, el('th', { textContent: k }), td(Array.isArray(v) ? v.join(', ') : String(v)))));
};
$('settings-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const input = $('sync-timeout');
  if (!input.checkValidity()) { $('settings-status').textContent = input.validationMessage; return; }
  try {
    const s = await api('/svc/v1/admin/settings', { method: 'PATCH', body: { sync_timeout_seconds: Number(input.value) } });
    $('settings-status').textContent = `Saved: Sync Timeout ${s.sync_timeout_seconds} s.`;
  } catch (e) { $('settings-status').textContent = e.message; }
});

let session = null;
loaders.security = async () => {
  const t = session?.key ? await api('/svc/v1/admin/2fa') : null;
  $('tfa-error').textContent = '';
  if (!t) {
    $('tfa-status').textContent = 'Two-factor sign-in belongs to an admin API key: create an admin key and sign in with it.';
    $('tfa-setup').hidden = true;
    $('tfa-disable-form').hidden = true;
    return;
  }
  $('tfa-status').textContent = t.enabled ? `Enabled for "${session.key.name}". ${t.recovery_codes_left} recovery code(s) left.` : `Not enabled for "${session.key.name}".`;
  $('tfa-setup').hidden = t.enabled;
  $('tfa-disable-form').hidden = !t.enabled;
};
$('tfa-setup').addEventListener('click', async () => {
  try {
    const s = await api('/svc/v1/admin/2fa/setup', { method: 'POST' });
    // drawn through an <img>: the SVG cannot run script there, and the CSP allows data: images
    $('tfa-qr').src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(s.qrSvg)}`;
    $('tfa-secret').textContent = s.secret;
    $('tfa-enroll').hidden = false;
    $('tfa-recovery').hidden = true;
  } catch (e) { $('tfa-error').textContent = e.message; }
});
$('tfa-confirm-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  try {
    const { recovery_codes } = await api('/svc/v1/admin/2fa/confirm', { method: 'POST', body: { code: $('tfa-code').value.trim() } });
    $('tfa-code').value = '';
    $('tfa-enroll').hidden = true;
    $('tfa-recovery-list').replaceChildren(...recovery_codes.map((c) => el('li', {}, el('code', { textContent: c }))));
    $('tfa-recovery').hidden = false;
    await loaders.security();
  } catch (e) { $('tfa-error').textContent = e.message; }
});
$('tfa-disable-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const code = $('tfa-disable-code').value.trim();
  try {
    await api('/svc/v1/admin/2fa/disable', { method: 'POST', body: /^\d{6}$/.test(code) ? { code } : { recovery_code: code } });
    $('tfa-disable-code').value = '';
    $('tfa-recovery').hidden = true;
    await loaders.security();
  } catch (e) { $('tfa-error').textContent = e.message; }
});

loaders.errors = async () => {
  const { data } = await api('/svc/v1/admin/errors');
  $('errors-table').replaceChildren(...(data.length ? data.map((e) => el('tr', { className: e.level }, td(when(e.at)), td(e.level), td(el('code', { textContent: e.message })))) : [el('tr', {}, el('td', { colSpan: 3, className: 'muted', textContent: 'no errors logged since start' }))]));
};
$('errors-refresh').addEventListener('click', refresh);

// ---- start ---------------------------------------------------------------------------------------------
async function start() {
  try {
    session = await api('/svc/v1/admin/session');
  } catch (e) {
    if (e.status === 403) showSignIn('This key is not an admin key.');
    else if (e.status !== 401) showSignIn(e.message);
    return;
  }
  $('signin').hidden = true;
  $('console').hidden = false;
  $('logout').hidden = session.via !== 'area_ticket';
  $('whoami').textContent = session.via === 'local_owner'
    ? 'open mode: no API key exists yet, so this local browser acts as the admin. Create an admin key to require sign-in.'
    : `signed in as ${session.key.name}${session.persist ? ' (kept 12 h)' : ''}`;
  show(current);
}

searchViews(loaders, { api, notice, show, when });

showVersion('version');
start();
