/**
 * Versioned migrations, applied in order at start. Each runs once (recorded in schema_migrations),
 * so applying them again is harmless. Written with Kysely's schema builder so they stay portable
 * to a PostgreSQL dialect.
 */
import { type Kysely, sql } from 'kysely';
import { isPostgres } from './dialect.ts';
import { rebuildVectorIndexes } from './retrieval.ts';

// deno-lint-ignore no-explicit-any
type AnyDb = Kysely<any>;

export interface Migration {
  version: number;
  name: string;
  up(db: AnyDb): Promise<void>;
}

export const migrations: Migration[] = [
  {
    version: 1,
    name: 'meta, api keys, settings, jobs, files',
    async up(db) {
      await db.schema.createTable('meta').ifNotExists()
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull()).execute();
      await db.schema.createTable('api_keys').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('token_prefix', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .addColumn('last_used_at', 'bigint').execute();
      await db.schema.createTable('settings').ifNotExists()
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull()).execute();
      await db.schema.createTable('jobs').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('node', 'text', (c) => c.notNull())
        .addColumn('task', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('result', 'text')
        .addColumn('result_location', 'text')
        .addColumn('error', 'text')
        .addColumn('error_code', 'integer')
        .addColumn('error_reason', 'text')
        .addColumn('progress_current', 'integer')
        .addColumn('progress_total', 'integer')
        .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('completed_at', 'bigint').execute();
      await db.schema.createIndex('jobs_node_status').ifNotExists().on('jobs').columns(['node', 'status']).execute();
      await db.schema.createIndex('jobs_owner_status').ifNotExists().on('jobs').columns(['owner_id', 'status']).execute();
      await db.schema.createTable('files').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('filename', 'text', (c) => c.notNull())
        .addColumn('purpose', 'text', (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull()).execute();
      await db.schema.createIndex('files_expires').ifNotExists().on('files').column('expires_at').execute();
    },
  },
  {
    version: 6,
    name: 'admin console: area tickets, two-factor enrollment',
    async up(db) {
      await db.schema.createTable('area_tickets').ifNotExists()
        .addColumn('id_hash', 'text', (c) => c.primaryKey())
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('csrf_token', 'text', (c) => c.notNull())
        .addColumn('persist', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull()).execute();
      await db.schema.createIndex('area_tickets_expires').ifNotExists().on('area_tickets').column('expires_at').execute();
      await db.schema.createTable('admin_two_factor').ifNotExists()
        .addColumn('key_id', 'text', (c) => c.primaryKey())
        .addColumn('secret', 'text', (c) => c.notNull())
        .addColumn('confirmed_at', 'bigint')
        .addColumn('recovery_hashes', 'text', (c) => c.notNull())
        .addColumn('last_step', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull()).execute();
    },
  },
  {
    version: 5,
    name: 'agents and versioned skills, per key',
    async up(db) {
      await db.schema.createTable('agents').ifNotExists()
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('agents_pk', ['owner', 'name']).execute();
      await db.schema.createTable('skills').ifNotExists()
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('prompt', 'text', (c) => c.notNull())
        .addColumn('input_schema', 'text', (c) => c.notNull())
        .addColumn('output_schema', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('skills_pk', ['owner', 'name', 'version']).execute();
    },
  },
  {
    version: 2,
    name: 'stored responses, vector stores, retrieval chunks with full-text index',
    async up(db) {
      await db.schema.createTable('responses').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull()).execute();
      await db.schema.createTable('response_input_items').ifNotExists()
        .addColumn('response_id', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('item_id', 'text', (c) => c.notNull())
        .addColumn('item', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('response_input_items_pk', ['response_id', 'position']).execute();
      await db.schema.createTable('vector_stores').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('embedding_model', 'text')
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_active_at', 'bigint', (c) => c.notNull()).execute();
      await db.schema.createIndex('vector_stores_owner').ifNotExists().on('vector_stores').column('owner_id').execute();
      await db.schema.createTable('vector_store_files').ifNotExists()
        .addColumn('vector_store_id', 'text', (c) => c.notNull())
        .addColumn('file_id', 'text', (c) => c.notNull())
        .addColumn('filename', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('usage_bytes', 'bigint', (c) => c.notNull())
        .addColumn('attributes', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('vector_store_files_pk', ['vector_store_id', 'file_id']).execute();
      // Chunks of any retrieval index (a vector store, a search collection), keyed by the owning index.
      const pg = isPostgres(db);
      await db.schema.createTable('retrieval_chunks').ifNotExists()
        .addColumn('id', pg ? 'serial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('index_id', 'text', (c) => c.notNull())
        .addColumn('doc_id', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('meta', 'text', (c) => c.notNull())
        .addColumn('embedded_dims', 'integer').execute();
      await db.schema.createIndex('retrieval_chunks_doc').ifNotExists().on('retrieval_chunks').columns(['index_id', 'doc_id']).execute();
      // BM25 side: an FTS5 table whose rowid is the chunk id (vectors live in per-dimension tables made on demand).
      if (pg) {
        // PostgreSQL has no FTS5: a tsvector kept by the server itself, ranked with ts_rank_cd (src/store/retrieval.ts).
        await sql`create table if not exists retrieval_fts (rowid bigint primary key, text text not null,
          tsv tsvector generated always as (to_tsvector('simple', text)) stored)`.execute(db);
        await sql`create index if not exists retrieval_fts_tsv on retrieval_fts using gin (tsv)`.execute(db);
      } else {
        await sql`create virtual table if not exists retrieval_fts using fts5(text, tokenize = 'unicode61 remove_diacritics 2')`.execute(
          db,
        );
      }
    },
  },
  {
    version: 7,
    name: 'fleet membership: node heartbeats',
    async up(db) {
      await db.schema.createTable('fleet_nodes').ifNotExists()
        .addColumn('tag', 'text', (c) => c.primaryKey())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('seen_at', 'bigint', (c) => c.notNull()).execute();
    },
  },
  {
    version: 4,
    name: 'search clusters, tenants, collections, per-key search access and grants',
    async up(db) {
      await db.schema.createTable('search_clusters').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('url', 'text')
        .addColumn('auth_token', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull()).execute();
      await db.schema.createTable('search_tenants').ifNotExists()
        .addColumn('cluster_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('search_tenants_pk', ['cluster_id', 'name']).execute();
      await db.schema.createTable('search_collections').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('cluster_id', 'text', (c) => c.notNull())
        .addColumn('tenant', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('embedding_model', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull()).execute();
      await db.schema.createIndex('search_collections_name').ifNotExists().unique().on('search_collections').columns([
        'cluster_id',
        'tenant',
        'name',
      ]).execute();
      // one row per key once its search access was set; no row = the default cluster, no grants
      await db.schema.createTable('search_key_access').ifNotExists()
        .addColumn('key_id', 'text', (c) => c.primaryKey())
        .addColumn('cluster_id', 'text')
        .addColumn('updated_at', 'bigint', (c) => c.notNull()).execute();
      // collection '' = every collection of the tenant
      await db.schema.createTable('search_grants').ifNotExists()
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('cluster_id', 'text', (c) => c.notNull())
        .addColumn('tenant', 'text', (c) => c.notNull())
        .addColumn('collection', 'text', (c) => c.notNull())
        .addColumn('access', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('search_grants_pk', ['key_id', 'cluster_id', 'tenant', 'collection']).execute();
    },
  },
  {
    version: 9,
    name: 'memory stores and their facts, per key',
    async up(db) {
      await db.schema.createTable('memory_stores').ifNotExists()
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('embedding_model', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('memory_stores_pk', ['owner', 'name']).execute();
      // the facts' text is searched through the retrieval index named after the store
      await db.schema.createTable('memory_facts').ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('owner', 'text', (c) => c.notNull())
        .addColumn('store', 'text', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull()).execute();
      await db.schema.createIndex('memory_facts_store').ifNotExists().on('memory_facts').columns(['owner', 'store']).execute();
    },
  },
  {
    version: 10,
    name: 'vector indexes rebuilt: 1-bit neighbour copies from 256 dimensions (else 8-bit), 32 neighbours, insert_l 40, search_l 200',
    async up(db) {
      await rebuildVectorIndexes(db);
    },
  },
];

/** Applies the pending migrations; returns the versions applied now. */
export async function migrate(db: AnyDb): Promise<number[]> {
  await db.transaction().execute(async (trx) => {
    if (isPostgres(trx)) await sql`select pg_advisory_xact_lock(7305127)`.execute(trx);
    await trx.schema.createTable('schema_migrations').ifNotExists()
      .addColumn('version', 'integer', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('applied_at', 'bigint', (c) => c.notNull()).execute();
  });
  const done = new Set((await db.selectFrom('schema_migrations').select('version').execute()).map((r) => Number(r.version)));
  const applied: number[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    const ran = await db.transaction().execute(async (trx) => {
      if (isPostgres(trx)) {
        // Nodes starting together on one PostgreSQL: one migrates, the others wait and then see it done
        // (concurrent CREATE ... IF NOT EXISTS can still collide in PostgreSQL's catalog).
        await sql`select pg_advisory_xact_lock(7305127)`.execute(trx);
        const again = await trx.selectFrom('schema_migrations').select('version').where('version', '=', m.version).executeTakeFirst();
        if (again) return false;
      }
      await m.up(trx);
      // ON CONFLICT: a second node migrating the same shared database at the same moment is harmless.
      await sql`insert into schema_migrations (version, name, applied_at) values (${m.version}, ${m.name}, ${Date.now()}) on conflict (version) do nothing`
        .execute(trx);
      return true;
    });
    if (ran) applied.push(m.version);
  }
  return applied;
}
