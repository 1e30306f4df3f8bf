// The console's search views: clusters, tenants and collections, and which key reaches which collection.
// They drive the search administration API (docs/api/search.md) like any admin client.
import { $, el } from '/common.js';

const td = (...c) => el('td', {}, ...c);
const button = (label, fn, className = 'small') => {
  const b = el('button', { type: 'button', className, textContent: label });
  b.addEventListener('click', fn);
  return b;
};
const emptyRow = (cols, text) => el('tr', {}, el('td', { colSpan: cols, className: 'muted', textContent: text }));
const enc = encodeURIComponent;
const CLUSTERS = '/svc/v1/search/clusters';

/** Fills a select with options, keeping the current choice when it is still offered. */
function fill(select, options, fallback = options[0]?.[0] ?? '') {
  const chosen = select.value;
  select.replaceChildren(...options.map(([value, label]) => new Option(label, value)));
  select.value = options.some(([v]) => v === chosen) ? chosen : fallback;
}

const describeStatus = (s) =>
  !s ? '…' : s.reachable ? `reachable · ${s.full_text} · vectors: ${s.vectors}` : `unreachable: ${s.error ?? 'unknown error'}`;

export function searchViews(loaders, { api, notice, show, when }) {
  const state = { cluster: 'default', tenant: '', key: null };
  const act = async (fn, done) => {
    try {
      await fn();
      if (done) notice(done);
    } catch (e) {
      notice(e.message, true);
    }
  };

  // ---- clusters
  loaders.search = async () => {
    const { data } = await api(CLUSTERS);
    $('clusters-table').replaceChildren(...data.map((c) => {
      const status = el('span', { className: 'muted', textContent: '…' });
      api(`${CLUSTERS}/${enc(c.id)}`).then((d) => {
        status.textContent = describeStatus(d.status);
        status.className = d.status?.reachable ? '' : 'error';
      }).catch((e) => { status.textContent = e.message; status.className = 'error'; });
      const actions = el('span', { className: 'actions' }, button('Collections', () => { state.cluster = c.id; show('collections'); }));
      if (c.id !== 'default') {
        actions.append(button('Delete', () => {
          if (!confirm(`Delete the cluster "${c.id}" with all its tenants, collections and documents?`)) return;
          act(() => api(`${CLUSTERS}/${enc(c.id)}`, { method: 'DELETE' }), `Deleted cluster ${c.id}.`).then(loaders.search);
        }, 'small danger'));
      }
      const row = el('tr', {}, td(el('code', { textContent: c.id })), td(c.kind), td(c.url ?? "the server's own store"), td(status), td(when(c.created_at * 1000)), td(actions));
      row.dataset.cluster = c.id;
      return row;
    }));
  };
  $('clusters-refresh').addEventListener('click', () => loaders.search().catch((e) => notice(e.message, true)));
  $('cluster-kind').addEventListener('change', () => {
    const pg = $('cluster-kind').value === 'postgres';
    $('cluster-url').placeholder = pg ? 'postgres://user:password@host:5432/db' : 'libsql://…, https://… or file:…';
    $('cluster-token').hidden = pg;
  });
  $('cluster-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = { id: $('cluster-id').value.trim(), kind: $('cluster-kind').value, url: $('cluster-url').value.trim() };
    const token = $('cluster-token').value;
    if (token && body.kind === 'libsql') body.auth_token = token;
    act(async () => {
      await api(CLUSTERS, { method: 'POST', body });
      $('cluster-form').reset();
    }, `Added cluster ${body.id}.`).then(loaders.search);
  });

  // ---- tenants and collections of one cluster
  const clusterBase = () => `${CLUSTERS}/${enc(state.cluster)}`;
  loaders.collections = async () => {
    const { data: clusters } = await api(CLUSTERS);
    if (!clusters.some((c) => c.id === state.cluster)) state.cluster = 'default'; // deleted meanwhile
    fill($('col-cluster'), clusters.map((c) => [c.id, c.id]));
    $('col-cluster').value = state.cluster;
    const { data: tenants } = await api(`${clusterBase()}/tenants`);
    fill($('col-tenant'), tenants.map((t) => [t.id, t.id]), state.tenant && tenants.some((t) => t.id === state.tenant) ? state.tenant : tenants[0]?.id ?? '');
    state.tenant = $('col-tenant').value;
    $('tenants-table').replaceChildren(...(tenants.length ? tenants.map((t) => {
      const row = el('tr', {}, td(t.id), td(when(t.created_at * 1000)), td(el('span', { className: 'actions' },
        button('Collections', () => { state.tenant = t.id; loaders.collections(); }),
        button('Delete', () => {
          if (!confirm(`Delete the tenant "${t.id}" with its collections and documents?`)) return;
          act(() => api(`${clusterBase()}/tenants/${enc(t.id)}`, { method: 'DELETE' }), `Deleted tenant ${t.id}.`).then(loaders.collections);
        }, 'small danger'),
      )));
      row.dataset.tenant = t.id;
      return row;
    }) : [emptyRow(3, 'no tenant yet')]));
    $('col-tenant-label').textContent = state.tenant || '—';
    $('collection-form').hidden = !state.tenant;
    if (!state.tenant) { $('collections-table').replaceChildren(emptyRow(7, 'add a tenant first')); return; }
    const { data: cols } = await api(`${clusterBase()}/tenants/${enc(state.tenant)}/collections`);
    const count = (n) => (n == null ? 'cluster unreachable' : String(n));
    $('collections-table').replaceChildren(...(cols.length ? cols.map((c) => {
      const row = el('tr', {}, td(c.name), td(el('code', { textContent: c.id })), td(c.embedding_model ?? '— (keyword only, or the default embedding model)'),
        td(count(c.document_count)), td(count(c.chunk_count)), td(when(c.created_at * 1000)), td(button('Delete', () => {
          if (!confirm(`Delete the collection "${c.name}" and its documents?`)) return;
          act(() => api(`${clusterBase()}/tenants/${enc(state.tenant)}/collections/${enc(c.name)}`, { method: 'DELETE' }), `Deleted collection ${c.name}.`)
            .then(loaders.collections);
        }, 'small danger')));
      row.dataset.collection = c.name;
      return row;
    }) : [emptyRow(7, 'no collection yet')]));
  };
  $('col-cluster').addEventListener('change', () => { state.cluster = $('col-cluster').value; state.tenant = ''; loaders.collections().catch((e) => notice(e.message, true)); });
  $('col-tenant').addEventListener('change', () => { state.tenant = $('col-tenant').value; loaders.collections().catch((e) => notice(e.message, true)); });
  $('tenant-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = $('tenant-name').value.trim();
    act(async () => {
      await api(`${clusterBase()}/tenants`, { method: 'POST', body: { name } });
      $('tenant-name').value = '';
      state.tenant = name;
    }, `Added tenant ${name}.`).then(loaders.collections);
  });
  $('collection-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const name = $('collection-name').value.trim();
    const model = $('collection-model').value.trim();
    act(async () => {
      await api(`${clusterBase()}/tenants/${enc(state.tenant)}/collections`, { method: 'POST', body: { name, ...(model ? { embedding_model: model } : {}) } });
      $('collection-form').reset();
    }, `Added collection ${state.tenant}/${name}.`).then(loaders.collections);
  });

  // ---- which key reaches which collection
  const keySearch = (id) => `/svc/v1/admin/keys/${enc(id)}/search`;
  const reachText = (k, s) => {
    if (!s?.cluster) return 'no search access';
    if (s.all_collections) return 'every collection (admin key)';
    return s.grants.length ? s.grants.map((g) => `${g.tenant}/${g.collection ?? '*'} (${g.access})`).join(', ') : 'nothing granted yet';
  };
  loaders.grants = async () => {
    const { data } = await api('/svc/v1/admin/keys');
    const keys = data.filter((k) => !k.revoked_at);
    const reach = await Promise.all(keys.map((k) => api(keySearch(k.id)).then((r) => r.search).catch(() => undefined)));
    $('reach-table').replaceChildren(...(keys.length ? keys.map((k, i) => {
      const row = el('tr', {}, td(k.name), td(k.role), td(reach[i]?.cluster ?? '—'), td(reachText(k, reach[i])),
        td(button('Edit', () => { state.key = k; editKey().catch((e) => notice(e.message, true)); })));
      row.dataset.key = k.id;
      return row;
    }) : [emptyRow(5, 'no API key yet: create one in Keys')]));
    if (state.key && keys.some((k) => k.id === state.key.id)) await editKey();
    else { state.key = null; $('grant-editor').hidden = true; }
  };

  /** The access being edited: read from the server each time, replaced as a whole on each change. */
  let access = null;
  async function editKey() {
    const k = state.key;
    const [{ search }, { data: clusters }] = await Promise.all([api(keySearch(k.id)), api(CLUSTERS)]);
    access = search;
    $('grant-key-name').textContent = `${k.name} (${k.role})`;
    fill($('grant-cluster'), [['', '(no search access)'], ...clusters.map((c) => [c.id, c.id])]);
    $('grant-cluster').value = search.cluster ?? '';
    $('grant-editor').hidden = false;
    $('grants-table').replaceChildren(...(search.all_collections
      ? [emptyRow(4, 'an admin key reaches every collection of its cluster')]
      : search.grants.length
      ? search.grants.map((g, i) => {
        const row = el('tr', {}, td(g.tenant), td(g.collection ?? 'all collections'), td(g.access), td(button('Revoke', () => {
          save(search.cluster, search.grants.filter((_, j) => j !== i), `Revoked ${g.tenant}/${g.collection ?? '*'} from ${k.name}.`);
        }, 'small danger revoke-grant')));
        row.dataset.grant = `${g.tenant}/${g.collection ?? '*'}`;
        return row;
      })
      : [emptyRow(4, search.cluster ? 'no grant: this key reaches no collection' : 'this key has no search access')]));
    $('grant-form').hidden = !search.cluster || search.all_collections;
    if (search.cluster) await fillGrantTargets(search.cluster);
  }

  async function fillGrantTargets(cluster) {
    const base = `${CLUSTERS}/${enc(cluster)}/tenants`;
    const { data: tenants } = await api(base);
    fill($('grant-tenant'), tenants.map((t) => [t.id, t.id]));
    const tenant = $('grant-tenant').value;
    const cols = tenant ? (await api(`${base}/${enc(tenant)}/collections`)).data : [];
    fill($('grant-collection'), [['', 'all collections of the tenant'], ...cols.map((c) => [c.name, c.name])], cols[0]?.name ?? '');
  }

  async function save(cluster, grants, done) {
    await act(async () => {
      const body = { search: cluster ? { cluster, grants: grants.map(({ tenant, collection, access }) => ({ tenant, collection, access })) } : false };
      await api(keySearch(state.key.id), { method: 'PUT', body });
    }, done);
    await loaders.grants().catch((e) => notice(e.message, true));
  }

  $('grant-cluster').addEventListener('change', () => {
    const next = $('grant-cluster').value;
    // grants name tenants of one cluster: moving the key to another cluster (or none) drops them
    if (access.grants.length && !confirm(`Move ${state.key.name} to ${next || 'no search access'}? Its grants are removed.`)) {
      $('grant-cluster').value = access.cluster ?? '';
      return;
    }
    save(next || null, [], next ? `${state.key.name} now searches cluster ${next}.` : `${state.key.name} has no search access now.`);
  });
  $('grant-tenant').addEventListener('change', () => fillGrantTargets(access.cluster).catch((e) => notice(e.message, true)));
  $('grant-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const grant = { tenant: $('grant-tenant').value, collection: $('grant-collection').value || null, access: $('grant-access').value };
    if (!grant.tenant) { notice('Add a tenant to this cluster first (Collections).', true); return; }
    // one grant per tenant/collection: a new one replaces the earlier access
    const others = access.grants.filter((g) => g.tenant !== grant.tenant || (g.collection ?? null) !== grant.collection);
    save(access.cluster, [...others, grant], `Granted ${grant.access} on ${grant.tenant}/${grant.collection ?? '*'} to ${state.key.name}.`);
  });
}
