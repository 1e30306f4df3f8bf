/**
 * The search control plane in the main store: clusters, tenants, collections, each key's search cluster
 * and its grants. The documents themselves live in the cluster's own database (libsql.ts, pg.ts).
 */
import type { Kysely } from 'kysely';
import type { Database, Db } from '../schema.ts';

export interface SearchClusterTable {
  id: string;
  kind: 'libsql' | 'postgres';
  url: string | null;
  auth_token: string | null;
  created_at: number;
}
export interface SearchTenantTable {
  cluster_id: string;
  name: string;
  created_at: number;
}
export interface SearchCollectionTable {
  id: string;
  cluster_id: string;
  tenant: string;
  name: string;
  embedding_model: string | null;
  created_at: number;
}
export interface SearchKeyAccessTable {
  key_id: string;
  cluster_id: string | null;
  updated_at: number;
}
export interface SearchGrantTable {
  key_id: string;
  cluster_id: string;
  tenant: string;
  collection: string;
  access: 'read' | 'write';
}

interface SearchTables {
  search_clusters: SearchClusterTable;
  search_tenants: SearchTenantTable;
  search_collections: SearchCollectionTable;
  search_key_access: SearchKeyAccessTable;
  search_grants: SearchGrantTable;
}
type SDb = Kysely<Database & SearchTables>;
const s = (db: Db) => db as unknown as SDb;

export const listClusters = (db: Db) => s(db).selectFrom('search_clusters').selectAll().orderBy('created_at').orderBy('id').execute();
export const getCluster = (db: Db, id: string) => s(db).selectFrom('search_clusters').selectAll().where('id', '=', id).executeTakeFirst();
export async function insertCluster(db: Db, row: SearchClusterTable): Promise<boolean> {
  const r = await s(db).insertInto('search_clusters').values(row).onConflict((oc) => oc.column('id').doNothing()).executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

export const listTenants = (db: Db, clusterId: string) =>
  s(db).selectFrom('search_tenants').selectAll().where('cluster_id', '=', clusterId).orderBy('name').execute();
export const getTenant = (db: Db, clusterId: string, name: string) =>
  s(db).selectFrom('search_tenants').selectAll().where('cluster_id', '=', clusterId).where('name', '=', name).executeTakeFirst();
export async function insertTenant(db: Db, row: SearchTenantTable): Promise<boolean> {
  const r = await s(db).insertInto('search_tenants').values(row).onConflict((oc) => oc.columns(['cluster_id', 'name']).doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

export function listCollections(db: Db, clusterId: string, tenant?: string) {
  let q = s(db).selectFrom('search_collections').selectAll().where('cluster_id', '=', clusterId);
  if (tenant !== undefined) q = q.where('tenant', '=', tenant);
  return q.orderBy('tenant').orderBy('name').execute();
}
export const getCollection = (db: Db, clusterId: string, tenant: string, name: string) =>
  s(db).selectFrom('search_collections').selectAll().where('cluster_id', '=', clusterId).where('tenant', '=', tenant).where(
    'name',
    '=',
    name,
  ).executeTakeFirst();
export async function insertCollection(db: Db, row: SearchCollectionTable): Promise<boolean> {
  const r = await s(db).insertInto('search_collections').values(row).onConflict((oc) =>
    oc.columns(['cluster_id', 'tenant', 'name']).doNothing()
  ).executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Removes control rows below (and including) a cluster, tenant or collection, grants on them too. */
export async function deleteControl(db: Db, clusterId: string, tenant?: string, collection?: string): Promise<void> {
  await s(db).transaction().execute(async (trx) => {
    let cols = trx.deleteFrom('search_collections').where('cluster_id', '=', clusterId);
    let grants = trx.deleteFrom('search_grants').where('cluster_id', '=', clusterId);
    if (tenant !== undefined) (cols = cols.where('tenant', '=', tenant)), (grants = grants.where('tenant', '=', tenant));
    if (collection !== undefined) (cols = cols.where('name', '=', collection)), (grants = grants.where('collection', '=', collection));
    await cols.execute();
    await grants.execute();
    if (collection !== undefined) return;
    let tenants = trx.deleteFrom('search_tenants').where('cluster_id', '=', clusterId);
    if (tenant !== undefined) tenants = tenants.where('name', '=', tenant);
    await tenants.execute();
    if (tenant !== undefined) return;
    await trx.updateTable('search_key_access').set({ cluster_id: null, updated_at: Date.now() }).where('cluster_id', '=', clusterId)
      .execute();
    await trx.deleteFrom('search_clusters').where('id', '=', clusterId).execute();
  });
}

export const getKeyAccess = (db: Db, keyId: string) =>
  s(db).selectFrom('search_key_access').selectAll().where('key_id', '=', keyId).executeTakeFirst();
export const listGrants = (db: Db, keyId: string) =>
  s(db).selectFrom('search_grants').selectAll().where('key_id', '=', keyId).orderBy('tenant').orderBy('collection').execute();

/** Replaces a key's search cluster (null = no search access) and all its grants at once. */
export async function setKeyAccess(
  db: Db,
  keyId: string,
  clusterId: string | null,
  grants: Omit<SearchGrantTable, 'key_id'>[],
): Promise<void> {
  await s(db).transaction().execute(async (trx) => {
    await trx.insertInto('search_key_access').values({ key_id: keyId, cluster_id: clusterId, updated_at: Date.now() })
      .onConflict((oc) => oc.column('key_id').doUpdateSet({ cluster_id: clusterId, updated_at: Date.now() })).execute();
    await trx.deleteFrom('search_grants').where('key_id', '=', keyId).execute();
    for (const g of grants) await trx.insertInto('search_grants').values({ key_id: keyId, ...g }).execute();
  });
}
