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
  deleteVectorStoreFileRow,
  deleteVectorStoreRows,
  getVectorStoreFileRow,
  getVectorStoreRow,
  insertVectorStore,
  insertVectorStoreFile,
  listVectorStoreFileRows,
  listVectorStoreRows,
  setVectorStoreFileAttributes,
  setVectorStoreFileStatus,
  touchVectorStore,
  updateVectorStore,
  type VectorStoreFileRow,
  type VectorStoreRow,
} from '../../store/vector-stores.ts';
import { docsWithoutMetadata, documentChunks, updateChunkMeta } from '../../store/retrieval.ts';
import { isPostgres } from '../../store/dialect.ts';
import { type AttributeFilter, attributeFilterSql } from '../../store/search/attribute-filter.ts';
import { requireFormat } from '../documents/detect.ts';
import { invalidArgument, notFound, ServiceError } from '../errors.ts';
import type { FileStore } from '../files/file-store.ts';
import { workers } from '../workers/index.ts';
import { type ChunkingOptions, DEFAULT_CHUNKING } from './chunk-document.ts';
import type { RetrievalEngine, SearchHit, SearchMode } from './engine.ts';

export interface VectorStoreCreate {
  name?: string;
  file_ids?: string[];
  metadata?: Record<string, string>;
  /** Our extension: the embedding model of this store (default: the admin setting default_embedding_model). */
  embedding_model?: string;
  chunking?: ChunkingOptions;
}

export interface StoreSearchResult {
  file_id: string;
  filename: string;
  score: number;
  attributes: Record<string, unknown>;
  text: string;
  chunk: SearchHit['chunk'];
}

const secs = (ms: number) => Math.floor(Number(ms) / 1000);

/** A file batch: the files attached together; its status and counts are read from those files. */
interface FileBatch {
  id: string;
  owner: string;
  storeId: string;
  fileIds: string[];
  createdAt: number;
  cancelled: boolean;
}

export class VectorStores {
  /** Background embeddings in flight (awaited by close() and by tests). */
  readonly pending = new Set<Promise<void>>();
  #closed = new AbortController();
  /** File batches live in memory: after a restart the files stay attached, the batch ids are forgotten. */
  #batches = new Map<string, FileBatch>();

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
      id: `vs_${randomId(24)}`,
      owner_id: owner,
      name: req.name ?? '',
      embedding_model: req.embedding_model?.trim() || null,
      metadata: JSON.stringify(req.metadata ?? {}),
      created_at: now,
      last_active_at: now,
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
    await updateVectorStore(this.db, id, {
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.metadata ? { metadata: JSON.stringify(patch.metadata) } : {}),
    });
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
  async attach(
    owner: string,
    storeId: string,
    fileId: string,
    attributes: Record<string, unknown> = {},
    chunking: ChunkingOptions = DEFAULT_CHUNKING,
  ) {
    const store = await this.#store(owner, storeId);
    const file = await this.files.get(owner, fileId);
    const existing = await getVectorStoreFileRow(this.db, storeId, fileId);
    if (existing) return this.fileView(existing);
    const format = await requireFormat(file.path, undefined, 'vector stores');
    const bytes = await this.files.read(owner, fileId);
    // the attributes ride on every chunk so search filters run in the store's own queries
    const chunks = await workers.run('retrieval.chunk', [bytes, format, {
      file_id: fileId,
      filename: file.filename,
      metadata: attributes,
      chunking,
    }, chunking]);
    const row: VectorStoreFileRow = {
      vector_store_id: storeId,
      file_id: fileId,
      filename: file.filename,
      status: 'in_progress',
      last_error: null,
      usage_bytes: chunks.reduce((a, c) => a + new TextEncoder().encode(c.text).length, 0),
      attributes: JSON.stringify(attributes),
      created_at: Date.now(),
    };
    await insertVectorStoreFile(this.db, row);
    this.#chunking.set(`${storeId}/${fileId}`, chunking);
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
        if (!model) {
          throw new ServiceError(
            400,
            'invalid_argument',
            'no embedding model: set the admin setting default_embedding_model or create the store with embedding_model',
          );
        }
        await this.engine.embedDocument(store.id, fileId, model, this.#closed.signal);
      } catch (e) {
        if (this.#closed.signal.aborted) return;
        error = e instanceof Error ? e.message : String(e);
        if (!(e instanceof ServiceError)) this.log.error(`embedding of ${fileId} in ${store.id} failed`, e);
      }
      // the store or file may have been removed meanwhile: the update then touches nothing; a cancelled file stays cancelled
      if ((await getVectorStoreFileRow(this.db, store.id, fileId))?.status === 'cancelled') return;
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
    return this.fileView(await this.#fileRow(owner, storeId, fileId));
  }

  async #fileRow(owner: string, storeId: string, fileId: string): Promise<VectorStoreFileRow> {
    await this.#store(owner, storeId);
    const row = await getVectorStoreFileRow(this.db, storeId, fileId);
    if (!row) throw notFound(`file '${fileId}' is not in vector store '${storeId}'`);
    return row;
  }

  /** Replaces a file's attributes (on its record and on every chunk, so filters see them at once). */
  async updateFileAttributes(owner: string, storeId: string, fileId: string, attributes: Record<string, unknown>) {
    const row = await this.#fileRow(owner, storeId, fileId);
    await updateChunkMeta(this.db, storeId, fileId, { metadata: attributes });
    await setVectorStoreFileAttributes(this.db, storeId, fileId, JSON.stringify(attributes));
    return this.fileView({ ...row, attributes: JSON.stringify(attributes) });
  }

  /** The parsed text of a file as stored: its chunks in order (neighbouring chunks share their overlap). */
  async fileContent(owner: string, storeId: string, fileId: string): Promise<string[]> {
    await this.#fileRow(owner, storeId, fileId);
    return (await documentChunks(this.db, storeId, fileId)).map((c) => c.text);
  }

  /** Attaches several files as one batch (each parsed now, embedded in the background). */
  async createBatch(owner: string, storeId: string, fileIds: string[], attributes: Record<string, unknown>, chunking?: ChunkingOptions) {
    await this.#store(owner, storeId);
    for (const f of fileIds) await this.files.get(owner, f);
    const batch: FileBatch = {
      id: `vsfb_${randomId(24)}`,
      owner,
      storeId,
      fileIds: [...new Set(fileIds)],
      createdAt: Date.now(),
      cancelled: false,
    };
    for (const f of batch.fileIds) await this.attach(owner, storeId, f, attributes, chunking);
    this.#batches.set(batch.id, batch);
    return this.batchView(batch);
  }

  #batch(owner: string, storeId: string, batchId: string): FileBatch {
    const b = this.#batches.get(batchId);
    if (!b || b.owner !== owner || b.storeId !== storeId) throw notFound(`file batch '${batchId}' not found in vector store '${storeId}'`);
    return b;
  }

  async getBatch(owner: string, storeId: string, batchId: string) {
    await this.#store(owner, storeId);
    return this.batchView(this.#batch(owner, storeId, batchId));
  }

  async listBatches(owner: string, storeId: string) {
    await this.#store(owner, storeId);
    const mine = [...this.#batches.values()].filter((b) => b.owner === owner && b.storeId === storeId).reverse();
    return Promise.all(mine.map((b) => this.batchView(b)));
  }

  /** Cancels a batch still in progress: its files still embedding are detached; finished ones stay. */
  async cancelBatch(owner: string, storeId: string, batchId: string) {
    await this.#store(owner, storeId);
    const b = this.#batch(owner, storeId, batchId);
    const view = await this.batchView(b);
    if (view.status !== 'in_progress') return view;
    b.cancelled = true;
    for (const f of await this.#batchFiles(b)) {
      if (f.status !== 'in_progress') continue;
      await this.engine.deleteDocument(storeId, f.file_id);
      await setVectorStoreFileStatus(this.db, storeId, f.file_id, 'cancelled', null);
    }
    return this.batchView(b);
  }

  async listBatchFiles(owner: string, storeId: string, batchId: string, filter?: string) {
    await this.#store(owner, storeId);
    const rows = await this.#batchFiles(this.#batch(owner, storeId, batchId));
    return rows.filter((r) => !filter || r.status === filter).map((r) => this.fileView(r));
  }

  async #batchFiles(b: FileBatch): Promise<VectorStoreFileRow[]> {
    const ids = new Set(b.fileIds);
    return (await listVectorStoreFileRows(this.db, b.storeId)).filter((r) => ids.has(r.file_id));
  }

  async batchView(b: FileBatch) {
    const files = await this.#batchFiles(b);
    const count = (s: string) => files.filter((f) => f.status === s).length;
    const inProgress = count('in_progress');
    return {
      id: b.id,
      object: 'vector_store.files_batch' as const,
      created_at: secs(b.createdAt),
      vector_store_id: b.storeId,
      status: b.cancelled
        ? ('cancelled' as const)
        : inProgress
        ? ('in_progress' as const)
        : count('failed') === files.length && files.length
        ? ('failed' as const)
        : ('completed' as const),
      file_counts: {
        in_progress: inProgress,
        completed: count('completed'),
        failed: count('failed'),
        cancelled: count('cancelled'),
        total: files.length,
      },
    };
  }

  /** Detaches a file: its chunks and vectors leave the store (the uploaded file itself stays). */
  async deleteFile(owner: string, storeId: string, fileId: string): Promise<void> {
    await this.getFile(owner, storeId, fileId);
    await this.engine.deleteDocument(storeId, fileId);
    await deleteVectorStoreFileRow(this.db, storeId, fileId);
  }

  /** Hybrid search over the given stores of this owner (each must be the owner's: 404 otherwise). */
  async search(
    owner: string,
    storeIds: string[],
    query: string,
    o: { limit: number; mode?: SearchMode; signal?: AbortSignal; filters?: AttributeFilter },
  ): Promise<StoreSearchResult[]> {
    if (!query.trim()) throw invalidArgument('query: must not be empty', [{ field: 'query', message: 'required' }]);
    const stores = await Promise.all(storeIds.map((id) => this.#store(owner, id)));
    // stores embedded with different models cannot share one query vector: group by model
    const byModel = new Map<string, string[]>();
    for (const s of stores) {
      const m = await this.#modelOf(s);
      byModel.set(m, [...(byModel.get(m) ?? []), s.id]);
    }
    if (o.filters) { for (const s of stores) await this.#backfillAttributes(s.id); }
    const filter = o.filters ? attributeFilterSql(o.filters, isPostgres(this.db)) : undefined;
    const hits: SearchHit[] = [];
    for (const [model, ids] of byModel) {
      hits.push(
        ...(await this.engine.search(ids, query, { limit: o.limit, mode: o.mode, model: model || undefined, signal: o.signal, filter })),
      );
    }
    hits.sort((a, b) => b.score - a.score);
    const attrs = new Map<string, Record<string, unknown>>();
    const out: StoreSearchResult[] = [];
    for (const h of hits.slice(0, o.limit)) {
      const key = `${h.chunk.index_id}/${h.chunk.doc_id}`;
      if (!attrs.has(key)) {
        attrs.set(key, JSON.parse((await getVectorStoreFileRow(this.db, h.chunk.index_id, h.chunk.doc_id))?.attributes ?? '{}'));
      }
      out.push({
        file_id: h.chunk.doc_id,
        filename: String(h.chunk.meta.filename ?? ''),
        score: h.score,
        attributes: attrs.get(key)!,
        text: h.chunk.text,
        chunk: h.chunk,
      });
    }
    for (const s of stores) await touchVectorStore(this.db, s.id, Date.now());
    return out;
  }

  /** Stores whose chunks are known to carry their file's attributes (checked once per process). */
  #attributesOnChunks = new Set<string>();

  /** Files attached before attributes rode on the chunks get them copied there, so filters see them. */
  async #backfillAttributes(storeId: string): Promise<void> {
    if (this.#attributesOnChunks.has(storeId)) return;
    for (const fileId of await docsWithoutMetadata(this.db, storeId)) {
      const row = await getVectorStoreFileRow(this.db, storeId, fileId);
      if (row) await updateChunkMeta(this.db, storeId, fileId, { metadata: JSON.parse(row.attributes) });
    }
    this.#attributesOnChunks.add(storeId);
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
      id: row.id,
      object: 'vector_store' as const,
      created_at: secs(row.created_at),
      name: row.name,
      usage_bytes: files.reduce((a, f) => a + Number(f.usage_bytes), 0),
      file_counts: {
        in_progress: count('in_progress'),
        completed: count('completed'),
        failed: count('failed'),
        cancelled: count('cancelled'),
        total: files.length,
      },
      status: count('in_progress') ? ('in_progress' as const) : ('completed' as const),
      expires_after: null,
      expires_at: null,
      last_active_at: secs(row.last_active_at),
      metadata: JSON.parse(row.metadata),
      embedding_model: row.embedding_model,
    };
  }

  /** Chunking of the files attached since start-up (older files report the default they were cut with). */
  #chunking = new Map<string, ChunkingOptions>();

  fileView(r: VectorStoreFileRow) {
    const ch = this.#chunking.get(`${r.vector_store_id}/${r.file_id}`) ?? DEFAULT_CHUNKING;
    return {
      id: r.file_id,
      object: 'vector_store.file' as const,
      usage_bytes: Number(r.usage_bytes),
      created_at: secs(r.created_at),
      vector_store_id: r.vector_store_id,
      status: r.status,
      last_error: r.last_error ? { code: 'server_error' as const, message: r.last_error } : null,
      chunking_strategy: { type: 'static' as const, static: { max_chunk_size_tokens: ch.maxTokens, chunk_overlap_tokens: ch.overlap } },
      attributes: JSON.parse(r.attributes),
    };
  }
}
