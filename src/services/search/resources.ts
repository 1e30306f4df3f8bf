/**
 * Search resources and who may reach them: clusters (a search database), tenants, collections, a key's
 * search cluster and its grants (docs/api/search.md). Opens each cluster's backend on demand; a cluster
 * that cannot be reached is 503 service_unavailable with Retry-After, never a 500.
 */
import type { Db } from '../../store/schema.ts';
import * as control from '../../store/search/control.ts';
import { openStore } from '../../store/db.ts';
import { isPostgres } from '../../store/dialect.ts';
import type { Owner } from '../keys/api-keys.ts';
import { invalidArgument, notFound, ServiceError } from '../errors.ts';
import type { Embedder } from '../retrieval/engine.ts';
import type { ClusterStatus, SearchBackend } from './backend.ts';
import { LibsqlBackend } from './libsql-backend.ts';
import { PgBackend } from './pg-backend.ts';

export const DEFAULT_CLUSTER = 'default';
export type Access = 'read' | 'write';
export interface Grant {
  tenant: string;
  collection: string | null;
  access: Access;
}
export interface KeySearchAccess {
  cluster: string | null;
  grants: Grant[];
  all: boolean;
}

export const unavailable = (message: string, cause?: unknown) =>
  new ServiceError(503, 'service_unavailable', message, { headers: { 'Retry-After': '5' }, cause });
export const searchAccessDenied = () =>
  new ServiceError(
    403,
    'search_access_denied',
    'this API key has no search access; an administrator grants it with PUT /svc/v1/admin/keys/{id}/search',
  );

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);
/** Whether an error means the cluster's database could not be reached (rather than a bug or a bad query). */
export function isConnectionError(e: unknown): boolean {
  for (let x = e as { code?: unknown; cause?: unknown; message?: unknown } | undefined, i = 0; x && i < 5; x = x.cause as typeof x, i++) {
    if (typeof x.code === 'string' && CONNECTION_CODES.has(x.code)) return true;
    if (
      typeof x.message === 'string' &&
      /ECONNREFUSED|fetch failed|Connection terminated|connect ETIMEDOUT|timeout exceeded when trying to connect|SERVER_ERROR|socket hang up/i
        .test(x.message)
    ) return true;
  }
  return false;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
export function checkName(what: string, name: string): string {
  if (!NAME.test(name)) {
    throw invalidArgument(`${what} name '${name}': 1 to 63 letters, digits, _ . -, starting with a letter or digit`, [{
      field: 'name',
      message: 'invalid name',
    }]);
  }
  return name;
}

export interface ClusterOut {
  id: string;
  object: 'search.cluster';
  kind: string;
  url: string | null;
  created_at: number;
  status?: ClusterStatus;
}
export interface CollectionOut {
  id: string;
  object: 'search.collection';
  cluster: string;
  tenant: string;
  name: string;
  embedding_model: string | null;
  created_at: number;
}

const clusterOut = (r: control.SearchClusterTable): ClusterOut => ({
  id: r.id,
  object: 'search.cluster',
  kind: r.kind,
  url: r.url ? redact(r.url) : null,
  created_at: Math.floor(Number(r.created_at) / 1000),
});
const collectionOut = (r: control.SearchCollectionTable): CollectionOut => ({
  id: r.id,
  object: 'search.collection',
  cluster: r.cluster_id,
  tenant: r.tenant,
  name: r.name,
  embedding_model: r.embedding_model,
  created_at: Math.floor(Number(r.created_at) / 1000),
});
/** A URL without its password (connection strings carry credentials). */
function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

export class SearchResources {
  #backends = new Map<string, Promise<SearchBackend>>();
  #defaultReady: Promise<void> | null = null;

  constructor(private db: Db, private embedder: Embedder) {}

  /** The embedded store is the default cluster; its row is made on first use. */
  #ensureDefault(): Promise<void> {
    this.#defaultReady ??= control.insertCluster(this.db, {
      id: DEFAULT_CLUSTER,
      kind: isPostgres(this.db) ? 'postgres' : 'libsql',
      url: null,
      auth_token: null,
      created_at: Date.now(),
    }).then(() => {});
    return this.#defaultReady;
  }

  // ---- clusters

  async createCluster(id: string, kind: 'libsql' | 'postgres', url: string | null, authToken: string | null): Promise<ClusterOut> {
    checkName('cluster', id);
    if (kind === 'postgres' && !url) {
      throw invalidArgument('a postgres cluster needs url (postgres://user:pass@host:port/db)', [{ field: 'url', message: 'required' }]);
    }
    if (url && kind === 'postgres' && !/^postgres(ql)?:\/\//.test(url)) {
      throw invalidArgument('url: a postgres:// URL', [{ field: 'url', message: 'invalid' }]);
    }
    if (url && kind === 'libsql' && !/^(libsql|https?|wss?|file):/.test(url)) {
      throw invalidArgument('url: a libsql://, http(s):// or file: URL', [{ field: 'url', message: 'invalid' }]);
    }
    await this.#ensureDefault();
    const row = { id, kind, url, auth_token: authToken, created_at: Date.now() };
    if (!(await control.insertCluster(this.db, row))) throw new ServiceError(409, 'conflict', `cluster '${id}' already exists`);
    return clusterOut(row);
  }

  async listClusters(): Promise<ClusterOut[]> {
    await this.#ensureDefault();
    return (await control.listClusters(this.db)).map(clusterOut);
  }

  async getCluster(id: string): Promise<ClusterOut> {
    await this.#ensureDefault();
    const row = await control.getCluster(this.db, id);
    if (!row) throw notFound(`cluster '${id}' not found`);
    let status: ClusterStatus;
    try {
      status = await (await this.backend(id)).status();
    } catch (e) {
      status = { reachable: false, full_text: 'unknown', vectors: 'unknown', error: (e as Error).message };
    }
    return { ...clusterOut(row), status };
  }

  async deleteCluster(id: string): Promise<{ id: string; object: 'search.cluster'; deleted: true }> {
    if (id === DEFAULT_CLUSTER) throw invalidArgument('the default cluster (the embedded store) cannot be deleted');
    if (!(await control.getCluster(this.db, id))) throw notFound(`cluster '${id}' not found`);
    const cols = await control.listCollections(this.db, id);
    if (cols.length) {
      const b = await this.backend(id);
      for (const c of cols) await this.#guard(() => b.deleteIndex(c.id));
    }
    await control.deleteControl(this.db, id);
    const b = this.#backends.get(id);
    this.#backends.delete(id);
    if (b) await b.then((x) => x.close()).catch(() => {});
    return { id, object: 'search.cluster', deleted: true };
  }

  /** The backend of a cluster, opened once; failures to open are 503 and retried on the next call. */
  backend(clusterId: string): Promise<SearchBackend> {
    let p = this.#backends.get(clusterId);
    if (!p) {
      p = this.#open(clusterId);
      this.#backends.set(clusterId, p);
      p.catch(() => this.#backends.delete(clusterId));
    }
    return p;
  }

  async #open(clusterId: string): Promise<SearchBackend> {
    const row = await control.getCluster(this.db, clusterId);
    if (!row) throw notFound(`cluster '${clusterId}' not found`);
    try {
      if (!row.url) return new LibsqlBackend(this.db, this.embedder);
      if (row.kind === 'postgres') return await PgBackend.open(row.url, this.embedder);
      const s = await openStore(row.url, row.auth_token ?? undefined);
      return new LibsqlBackend(s.db, this.embedder, s.close);
    } catch (e) {
      throw unavailable(`search cluster '${clusterId}' cannot be reached: ${(e as Error).message}`, e);
    }
  }

  /** Runs a backend call; a lost connection to the cluster becomes 503 with Retry-After. */
  async #guard<T>(fn: () => Promise<T>, cluster?: string): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (isConnectionError(e)) {
        throw unavailable(`search cluster${cluster ? ` '${cluster}'` : ''} is momentarily unavailable: ${(e as Error).message}`, e);
      }
      throw e;
    }
  }

  async withBackend<T>(clusterId: string, fn: (b: SearchBackend) => Promise<T>): Promise<T> {
    return this.#guard(async () => fn(await this.backend(clusterId)), clusterId);
  }

  // ---- tenants

  /** 404 unless the cluster exists. */
  async requireCluster(id: string): Promise<void> {
    await this.#cluster(id);
  }

  async #cluster(id: string) {
    await this.#ensureDefault();
    const row = await control.getCluster(this.db, id);
    if (!row) throw notFound(`cluster '${id}' not found`);
    return row;
  }

  async createTenant(cluster: string, name: string) {
    await this.#cluster(cluster);
    checkName('tenant', name);
    const row = { cluster_id: cluster, name, created_at: Date.now() };
    if (!(await control.insertTenant(this.db, row))) {
      throw new ServiceError(409, 'conflict', `tenant '${name}' already exists in cluster '${cluster}'`);
    }
    return tenantOut(row);
  }

  async listTenants(cluster: string) {
    await this.#cluster(cluster);
    return (await control.listTenants(this.db, cluster)).map(tenantOut);
  }

  async getTenant(cluster: string, name: string) {
    await this.#cluster(cluster);
    const row = await control.getTenant(this.db, cluster, name);
    if (!row) throw notFound(`tenant '${name}' not found in cluster '${cluster}'`);
    return tenantOut(row);
  }

  async deleteTenant(cluster: string, name: string) {
    await this.getTenant(cluster, name);
    const cols = await control.listCollections(this.db, cluster, name);
    if (cols.length) {
      await this.withBackend(cluster, async (b) => {
        for (const c of cols) await b.deleteIndex(c.id);
      });
    }
    await control.deleteControl(this.db, cluster, name);
    return { id: name, object: 'search.tenant', cluster, deleted: true };
  }

  // ---- collections

  async createCollection(cluster: string, tenant: string, name: string, embeddingModel: string | null): Promise<CollectionOut> {
    await this.getTenant(cluster, tenant);
    checkName('collection', name);
    const row = {
      id: `scol_${crypto.randomUUID().replace(/-/g, '').slice(0, 24)}`,
      cluster_id: cluster,
      tenant,
      name,
      embedding_model: embeddingModel,
      created_at: Date.now(),
    };
    if (!(await control.insertCollection(this.db, row))) {
      throw new ServiceError(409, 'conflict', `collection '${name}' already exists in tenant '${tenant}'`);
    }
    return collectionOut(row);
  }

  async listCollections(cluster: string, tenant?: string): Promise<CollectionOut[]> {
    if (tenant !== undefined) await this.getTenant(cluster, tenant);
    else await this.#cluster(cluster);
    return (await control.listCollections(this.db, cluster, tenant)).map(collectionOut);
  }

  /**
   * Collections with their document and chunk counts, as the console lists them; the counts are null while
   * the cluster's database cannot be reached (the list itself lives in the main store).
   */
  async withCounts(
    cluster: string,
    cols: CollectionOut[],
  ): Promise<(CollectionOut & { document_count: number | null; chunk_count: number | null })[]> {
    const counts = cols.length ? await this.withBackend(cluster, (b) => b.counts(cols.map((c) => c.id))).catch(() => null) : new Map();
    return cols.map((c) => {
      const n = counts?.get(c.id);
      return { ...c, document_count: counts ? n?.documents ?? 0 : null, chunk_count: counts ? n?.chunks ?? 0 : null };
    });
  }

  async getCollection(cluster: string, tenant: string, name: string): Promise<CollectionOut> {
    const row = await control.getCollection(this.db, cluster, tenant, name);
    if (!row) throw notFound(`collection '${tenant}/${name}' not found`);
    return collectionOut(row);
  }

  async deleteCollection(cluster: string, tenant: string, name: string) {
    const c = await this.getCollection(cluster, tenant, name);
    await this.withBackend(cluster, (b) => b.deleteIndex(c.id));
    await control.deleteControl(this.db, cluster, tenant, name);
    return { id: c.id, object: 'search.collection', deleted: true };
  }

  // ---- per-key access

  /** A key's search reach: admin keys reach every collection of their cluster; no row yet = the default cluster. */
  async accessOf(owner: Owner): Promise<KeySearchAccess> {
    const row = owner.keyId ? await control.getKeyAccess(this.db, owner.keyId) : undefined;
    const cluster = row ? row.cluster_id : DEFAULT_CLUSTER;
    const grants = owner.keyId
      ? (await control.listGrants(this.db, owner.keyId)).map((g) => ({
        tenant: g.tenant,
        collection: g.collection || null,
        access: g.access,
      }))
      : [];
    return { cluster, grants, all: owner.role === 'admin' };
  }

  /** What the token reveal and GET .../search show: the cluster and the grants (admin keys: everything). */
  async reachOf(owner: Owner) {
    const a = await this.accessOf(owner);
    return { cluster: a.cluster, all_collections: a.cluster !== null && a.all, grants: a.cluster ? a.grants : [] };
  }

  async setAccess(keyId: string, cluster: string | null, grants: Grant[]): Promise<void> {
    if (cluster !== null) await this.#cluster(cluster);
    await control.setKeyAccess(
      this.db,
      keyId,
      cluster,
      cluster === null
        ? []
        : grants.map((g) => ({ cluster_id: cluster, tenant: g.tenant, collection: g.collection ?? '', access: g.access })),
    );
  }

  /** The key's cluster, or 403 search_access_denied. */
  async clusterOf(owner: Owner): Promise<KeySearchAccess & { cluster: string }> {
    const a = await this.accessOf(owner);
    if (a.cluster === null) throw searchAccessDenied();
    return a as KeySearchAccess & { cluster: string };
  }

  /** A collection the key may use for `need`; anything outside its grants is 404, as if it did not exist. */
  async collectionFor(owner: Owner, tenant: string, name: string, need: Access): Promise<CollectionOut> {
    const a = await this.clusterOf(owner);
    const hidden = () => notFound(`collection '${tenant}/${name}' not found`);
    const row = await control.getCollection(this.db, a.cluster, tenant, name);
    if (!row) throw hidden();
    const level = a.all ? 'write' : bestGrant(a.grants, tenant, name);
    if (!level) throw hidden();
    if (need === 'write' && level !== 'write') {
      throw new ServiceError(403, 'search_write_denied', `this API key may only read collection '${tenant}/${name}'`);
    }
    return collectionOut(row);
  }

  /** Every collection of the key's cluster it may read. */
  async readable(owner: Owner): Promise<CollectionOut[]> {
    const a = await this.clusterOf(owner);
    const all = await control.listCollections(this.db, a.cluster);
    return all.filter((c) => a.all || bestGrant(a.grants, c.tenant, c.name)).map(collectionOut);
  }

  async close(): Promise<void> {
    const all = [...this.#backends.values()];
    this.#backends.clear();
    for (const p of all) await p.then((b) => b.close()).catch(() => {});
  }
}

const tenantOut = (r: control.SearchTenantTable) => ({
  id: r.name,
  object: 'search.tenant',
  cluster: r.cluster_id,
  created_at: Math.floor(Number(r.created_at) / 1000),
});

function bestGrant(grants: Grant[], tenant: string, name: string): Access | null {
  let best: Access | null = null;
  for (const g of grants) {
    if (g.tenant !== tenant || (g.collection !== null && g.collection !== name)) continue;
    if (g.access === 'write') return 'write';
    best = 'read';
  }
  return best;
}
