/** Table shapes, shared by every store module. Timestamps are integer milliseconds since the epoch. */
import type { Generated, Kysely } from 'kysely';

export interface MetaTable {
  key: string;
  value: string;
}

export interface ApiKeyTable {
  id: string;
  name: string;
  role: 'admin' | 'user';
  token_hash: string;
  token_prefix: string;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export interface SettingTable {
  key: string;
  value: string;
  updated_at: number;
}

export interface JobTable {
  id: string;
  owner_id: string;
  node: string;
  task: string;
  status: 'processing' | 'completed' | 'failed' | 'cancelled';
  /** The result as JSON text, when it lives in the shared record. */
  result: string | null;
  /** 'record': result above; 'node': held in the memory of `node` (over 4 MiB). */
  result_location: 'record' | 'node' | null;
  error: string | null;
  error_code: number | null;
  error_reason: string | null;
  progress_current: number | null;
  progress_total: number | null;
  cancel_requested: number;
  created_at: number;
  completed_at: number | null;
}

export interface FileTable {
  id: string;
  owner_id: string;
  filename: string;
  purpose: string;
  bytes: number;
  content_type: string;
  path: string;
  created_at: number;
  expires_at: number;
}

/** A console sign-in: only the SHA-256 of the ticket is stored. */
export interface AreaTicketTable {
  id_hash: string;
  key_id: string;
  csrf_token: string;
  persist: number;
  created_at: number;
  expires_at: number;
}

/** TOTP second factor of an admin key; `confirmed_at` null while enrollment is pending. */
export interface AdminTwoFactorTable {
  key_id: string;
  secret: string;
  confirmed_at: number | null;
  /** JSON array of SHA-256 hex digests of the unused recovery codes. */
  recovery_hashes: string;
  /** Last accepted TOTP time step (a code is accepted once). */
  last_step: number | null;
  created_at: number;
}

export interface ResponseTable {
  id: string;
  owner_id: string;
  created_at: number;
  body: string;
}

export interface ResponseInputItemTable {
  response_id: string;
  position: number;
  item_id: string;
  item: string;
}

export interface VectorStoreTable {
  id: string;
  owner_id: string;
  name: string;
  embedding_model: string | null;
  metadata: string;
  created_at: number;
  last_active_at: number;
}

export interface VectorStoreFileTable {
  vector_store_id: string;
  file_id: string;
  filename: string;
  status: 'in_progress' | 'completed' | 'failed' | 'cancelled';
  last_error: string | null;
  usage_bytes: number;
  attributes: string;
  created_at: number;
}

export interface RetrievalChunkTable {
  id: Generated<number>;
  index_id: string;
  doc_id: string;
  position: number;
  text: string;
  meta: string;
  /** Dimensions of the stored vector; null until the chunk is embedded. */
  embedded_dims: number | null;
}

export interface Database {
  meta: MetaTable;
  api_keys: ApiKeyTable;
  settings: SettingTable;
  jobs: JobTable;
  files: FileTable;
  area_tickets: AreaTicketTable;
  admin_two_factor: AdminTwoFactorTable;
  agents: AgentTable;
  skills: SkillTable;
  responses: ResponseTable;
  response_input_items: ResponseInputItemTable;
  vector_stores: VectorStoreTable;
  vector_store_files: VectorStoreFileTable;
  retrieval_chunks: RetrievalChunkTable;
  fleet_nodes: FleetNodeTable;
  memory_stores: MemoryStoreTable;
  memory_facts: MemoryFactTable;
}

/** One node of a fleet sharing this database: its last heartbeat (docs/fleet.md). */
export interface FleetNodeTable {
  tag: string;
  started_at: number;
  seen_at: number;
}

export type Db = Kysely<Database>;

/** A named agent configuration of one key; `config` is JSON text (docs/api/agents.md). */
export interface AgentTable {
  owner: string;
  name: string;
  config: string;
  created_at: number;
  updated_at: number;
}

/** One version of a named skill of one key; schemas are JSON text. */
export interface SkillTable {
  owner: string;
  name: string;
  version: number;
  description: string | null;
  prompt: string;
  input_schema: string;
  output_schema: string | null;
  created_at: number;
}

/** A named memory store of one key (docs/api/agents.md). */
export interface MemoryStoreTable {
  owner: string;
  name: string;
  /** null: the default embedding model at the time of use. */
  embedding_model: string | null;
  created_at: number;
}

/** One remembered fact; `source` is `user` (written back from a turn) or `api` (added through the route). */
export interface MemoryFactTable {
  id: string;
  owner: string;
  store: string;
  text: string;
  source: string;
  created_at: number;
}
