/**
 * Vector stores (dialect A): per-owner stores of uploaded files. Attaching a file parses and chunks it
 * with the document pipeline and stores the chunks, which makes them full-text searchable at once
 * (status in_progress); embedding then runs in the background, and the file becomes semantically
 * searchable and `completed` (or `failed` with the reason). Search and deletion go through the shared
 * retrieval engine.
 */
import { randomId } from '../../ids.ts';
import type { Db } from '../../store/schema.ts';
import {
  deleteVectorStoreFileRow, deleteVectorStoreRows, getVectorStoreFileRow, getVectorStoreRow, insertVectorStore, insertVectorStoreFile,
  listVectorStoreFileRows, listVectorStoreRows, setVectorStoreFileStatus, touchVectorStore, updateVectorStore,
  type VectorStoreFileRow, type VectorStoreRow,
} from '../../store/vector-stores.ts';
import { requireFormat } from '../documents/detect.ts';
import { invalidArgument, notFound, ServiceError } from '../errors.ts';
import type { FileStore } from '../files/file-store.ts';
import { workers } from '../workers/index.ts';
import { DEFAULT_CHUNKING, type ChunkingOptions } from './chunk-document.ts';
import type { RetrievalEngine, SearchHit, SearchMode } from './engine.ts';

export interface VectorStoreCreate {
  name?: string;
  file_ids?: string[];
  metadata?: Record<string, string>;
  /** Our extension: the embedding model of this store (default: the admin setting default_embedding_model). */
  embedding_model?: string;
  chunking?: ChunkingOptions;
}

export interface StoreSearchResult { file_id: string; filename: string; score: number; attributes: Record<string, unknown>; text: string; chunk: SearchHit['chunk'] }

const secs = (ms: number) => Math.floor(Number(ms) / 1000);

export class VectorStores {
  /** Background embeddings in flight (awaited by close() and by tests). */
  readonly pending = new Set<Promise<void>>();
  #closed = new AbortController();

  constructor(
    private db: Db,
    private files: FileStore,
    private engine: RetrievalEngine,
    private defaultModel: () => Promise<string>,
    private log: { error(msg: string, err?: unknown): void } = console,
  ) {}

  async create(owner: string, req: VectorStoreCreate) {
    const now = Date.now();
    // the files must exist for this owner before anything is written
    for (const f of req.file_ids ?? []) await this.files.get(owner, f);
    const row: VectorStoreRow = {
      id: `vs_${randomId(24)}`, owner_id: owner, name: req.name ?? '', embedding_model: req.embedding_model?.trim() || null,
      metadata: JSON.stringify(req.metadata ?? {}), created_at: now, last_active_at: now,
    };
    await insertVectorStore(this.db, row);
    for (const f of req.file_ids ?? []) await this.attach(owner, row.id, f, {}, req.chunking);
    return this.view(row);
  }

  async #store(owner: string, id: string): Promise<VectorStoreRow> {
    const row = await getVectorStoreRow(this.db, id);
    if (!row || row.owner_id !== owner) throw notFound(`vector store '${id}' not found`);
    return row;
  }

  async get(owner: string, id: string) {
    return this.view(await this.#store(owner, id));
  }

  async list(owner: string) {
    return Promise.all((await listVectorStoreRows(this.db, owner)).map((r) => this.view(r)));
  }

  async update(owner: string, id: string, patch: { name?: string; metadata?: Record<string, string> }) {
    await this.#store(owner, id);
    await updateVectorStore(this.db, id, { ...(patch.name !== undefined ? { name: patch.name } : {}), ...(patch.metadata ? { metadata: JSON.stringify(patch.metadata) } : {}) });
    return this.get(owner, id);
  }

  /** Removes the store, its file records and every chunk and vector indexed in it. */
  async delete(owner: string, id: string): Promise<void> {
    await this.#store(owner, id);
    await this.engine.deleteIndex(id);
    await deleteVectorStoreRows(this.db, id);
  }

  async #modelOf(store: VectorStoreRow): Promise<string> {
    return store.embedding_model || (await this.defaultModel());
  }

  /** Parses, chunks and stores the file (full-text searchable on return); embedding continues in the background. */
  async attach(owner: string, storeId: string, fileId: string, attributes: Record<string, unknown> = {}, chunking: ChunkingOptions = DEFAULT_CHUNKING) {
    const store = await this.#store(owner, storeId);
    const file = await this.files.get(owner, fileId);
    const existing = await getVectorStoreFileRow(this.db, storeId, fileId);
    if (existing) return this.fileView(existing);
    const format = await requireFormat(file.path, undefined, 'vector stores');
    const bytes = await this.files.read(owner, fileId);
    const chunks = await workers.run('retrieval.chunk', [bytes, format, { file_id: fileId, filename: file.filename }, chunking]);
    const row: VectorStoreFileRow = {
      vector_store_id: storeId, file_id: fileId, filename: file.filename, status: 'in_progress', last_error: null,
      usage_bytes: chunks.reduce((a, c) => a + new TextEncoder().encode(c.text).length, 0), attributes: JSON.stringify(attributes), created_at: Date.now(),
    };
    await insertVectorStoreFile(this.db, row);
    try {
      await this.engine.addDocument(storeId, fileId, chunks);
    } catch (e) {
      await deleteVectorStoreFileRow(this.db, storeId, fileId);
      throw e;
    }
    await touchVectorStore(this.db, storeId, Date.now());
    this.#embedLater(store, fileId);
    return this.fileView(row);
  }

  #embedLater(store: VectorStoreRow, fileId: string): void {
    const job = (async () => {
      let error: string | null = null;
      try {
        const model = await this.#modelOf(store);
        if (!model) throw new ServiceError(400, 'invalid_argument', 'no embedding model: set the admin setting default_embedding_model or create the store with embedding_model');
        await this.engine.embedDocument(store.id, fileId, model, this.#closed.signal);
      } catch (e) {
        if (this.#closed.signal.aborted) return;
        error = e instanceof Error ? e.message : String(e);
        if (!(e instanceof ServiceError)) this.log.error(`embedding of ${fileId} in ${store.id} failed`, e);
      }
      // the store or file may have been removed meanwhile: the update then touches nothing
      await setVectorStoreFileStatus(this.db, store.id, fileId, error ? 'failed' : 'completed', error);
    })().catch((e) => this.log.error('vector store file status', e));
    this.pending.add(job);
    void job.finally(() => this.pending.delete(job));
  }

  async listFiles(owner: string, storeId: string, filter?: string) {
    await this.#store(owner, storeId);
    const rows = await listVectorStoreFileRows(this.db, storeId);
    return rows.filter((r) => !filter || r.status === filter).map((r) => this.fileView(r));
  }

  async getFile(owner: string, storeId: string, fileId: string) {
    await this.#store(owner, storeId);
    const row = await getVectorStoreFileRow(this.db, storeId, fileId);
    if (!row) throw notFound(`file '${fileId}' is not in vector store '${storeId}'`);
    return this.fileView(row);
  }

  /** Detaches a file: its chunks and vectors leave the store (the uploaded file itself stays). */
  async deleteFile(owner: string, storeId: string, fileId: string): Promise<void> {
    await this.getFile(owner, storeId, fileId);
    await this.engine.deleteDocument(storeId, fileId);
    await deleteVectorStoreFileRow(this.db, storeId, fileId);
  }

  /** Hybrid search over the given stores of this owner (each must be the owner's: 404 otherwise). */
  async search(owner: string, storeIds: string[], query: string, o: { limit: number; mode?: SearchMode; signal?: AbortSignal }): Promise<StoreSearchResult[]> {
    if (!query.trim()) throw invalidArgument('query: must not be empty', [{ field: 'query', message: 'required' }]);
    const stores = await Promise.all(storeIds.map((id) => this.#store(owner, id)));
    // stores embedded with different models cannot share one query vector: group by model
    const byModel = new Map<string, string[]>();
    for (const s of stores) {
      const m = await this.#modelOf(s);
      byModel.set(m, [...(byModel.get(m) ?? []), s.id]);
    }
    const hits: SearchHit[] = [];
    for (const [model, ids] of byModel) hits.push(...(await this.engine.search(ids, query, { limit: o.limit, mode: o.mode, model: model || undefined, signal: o.signal })));
    hits.sort((a, b) => b.score - a.score);
    const attrs = new Map<string, Record<string, unknown>>();
    const out: StoreSearchResult[] = [];
    for (const h of hits.slice(0, o.limit)) {
      const key = `${h.chunk.index_id}/${h.chunk.doc_id}`;
      if (!attrs.has(key)) attrs.set(key, JSON.parse((await getVectorStoreFileRow(this.db, h.chunk.index_id, h.chunk.doc_id))?.attributes ?? '{}'));
      out.push({ file_id: h.chunk.doc_id, filename: String(h.chunk.meta.filename ?? ''), score: h.score, attributes: attrs.get(key)!, text: h.chunk.text, chunk: h.chunk });
    }
    for (const s of stores) await touchVectorStore(this.db, s.id, Date.now());
    return out;
  }

  /** Waits for the background embeddings started so far. */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  async close(): Promise<void> {
    this.#closed.abort();
    await Promise.allSettled([...this.pending]);
  }

  async view(row: VectorStoreRow) {
    const files = await listVectorStoreFileRows(this.db, row.id);
    const count = (s: string) => files.filter((f) => f.status === s).length;
    return {
      id: row.id, object: 'vector_store' as const, created_at: secs(row.created_at), name: row.name,
      usage_bytes: files.reduce((a, f) => a + Number(f.usage_bytes), 0),
      file_counts: { in_progress: count('in_progress'), completed: count('completed'), failed: count('failed'), cancelled: count('cancelled'), total: files.length },
      status: count('in_progress') ? ('in_progress' as const) : ('completed' as const),
      expires_after: null, expires_at: null, last_active_at: secs(row.last_active_at), metadata: JSON.parse(row.metadata),
      embedding_model: row.embedding_model,
    };
  }

  fileView(r: VectorStoreFileRow) {
    return {
      id: r.file_id, object: 'vector_store.file' as const, usage_bytes: Number(r.usage_bytes), created_at: secs(r.created_at), vector_store_id: r.vector_store_id,
      status: r.status, last_error: r.last_error ? { code: 'server_error' as const, message: r.last_error } : null,
      chunking_strategy: { type: 'static' as const, static: { max_chunk_size_tokens: DEFAULT_CHUNKING.maxTokens, chunk_overlap_tokens: DEFAULT_CHUNKING.overlap } },
      attributes: JSON.parse(r.attributes),
    };
  }
}
