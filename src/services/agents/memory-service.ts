/**
 * Memory: named stores of facts about the user, private to a key. A turn with memory on recalls the
 * store's facts most relevant to the user's last message (hybrid search by meaning and keywords through
 * the retrieval engine) and writes back the facts the user stated about themself in that message.
 * The write-back policy (docs/api/agents.md): a sentence of the last user message is a fact when it
 * speaks in the first person about the user ("I …", "I'm …", "My …"), is not a question and is not
 * addressed to the assistant (no "you"); exact repeats are skipped. With `extract: "model"` the chat
 * model itself lists the facts instead, in a constrained (JSON-schema) extraction call.
 */
import { randomId } from '../../ids.ts';
import {
  deleteFact,
  deleteMemoryStore,
  factsByIds,
  findFactByText,
  getFact,
  getMemoryStore,
  insertFact,
  insertMemoryStore,
  listFacts,
  listMemoryStores,
} from '../../store/memory.ts';
import type { Db, MemoryFactTable, MemoryStoreTable } from '../../store/schema.ts';
import { ServiceError } from '../errors.ts';
import type { RetrievalEngine } from '../retrieval/engine.ts';
import { checkName } from './agent-service.ts';

export interface Fact {
  id: string;
  text: string;
}

/** How many facts a turn recalls at most. */
export const RECALL_LIMIT = 5;
const MAX_FACT_CHARS = 300;

const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });
const iso = (ms: number) => new Date(Number(ms)).toISOString();
const indexOf = (owner: string, store: string) => `memory:${owner}:${store}`;

/** The sentences of a user message that state a fact about the user (the policy above). */
export function factsStated(message: string): string[] {
  const out: string[] = [];
  for (const raw of message.split(/(?<=[.!?])\s+|\n+/)) {
    const s = raw.trim().replace(/\s+/g, ' ');
    if (s.length < 6 || s.length > MAX_FACT_CHARS || s.endsWith('?')) continue;
    if (!/^(I|I'm|I’m|I've|I’ve|I'd|I’d|I'll|I’ll|My|Mine)\b/.test(s)) continue;
    if (/\byou(r|rs|rself)?\b/i.test(s)) continue;
    out.push(/[.!]$/.test(s) ? s : `${s}.`);
  }
  return out;
}

export class MemoryService {
  constructor(private readonly db: Db, private readonly retrieval: RetrievalEngine, private readonly defaultModel: () => Promise<string>) {}

  #storeView = (r: MemoryStoreTable) => ({
    object: 'memory_store',
    name: r.name,
    embedding_model: r.embedding_model,
    created_at: iso(r.created_at),
  });
  #factView = (r: MemoryFactTable) => ({
    object: 'memory_fact',
    id: r.id,
    store: r.store,
    text: r.text,
    source: r.source,
    created_at: iso(r.created_at),
  });

  async createStore(owner: string, name: string, embeddingModel?: string) {
    checkName(name);
    if (await getMemoryStore(this.db, owner, name)) throw new ServiceError(409, 'conflict', `memory store "${name}" already exists`);
    const row = { owner, name, embedding_model: embeddingModel?.trim() || null, created_at: Date.now() };
    await insertMemoryStore(this.db, row);
    return this.#storeView(row);
  }
  async listStores(owner: string) {
    return (await listMemoryStores(this.db, owner)).map(this.#storeView);
  }
  async getStore(owner: string, name: string) {
    const r = await getMemoryStore(this.db, owner, name);
    if (!r) throw new ServiceError(404, 'not_found', `memory store "${name}" not found`);
    return this.#storeView(r);
  }
  async deleteStore(owner: string, name: string) {
    await this.getStore(owner, name);
    await this.retrieval.deleteIndex(indexOf(owner, name));
    await deleteMemoryStore(this.db, owner, name);
    return { object: 'memory_store.deleted', name, deleted: true };
  }
  async listFacts(owner: string, store: string) {
    await this.getStore(owner, store);
    return (await listFacts(this.db, owner, store)).map(this.#factView);
  }
  async deleteFact(owner: string, store: string, id: string) {
    await this.getStore(owner, store);
    if (!(await deleteFact(this.db, owner, store, id))) {
      throw new ServiceError(404, 'not_found', `fact "${id}" not found in memory store "${store}"`);
    }
    await this.retrieval.deleteDocument(indexOf(owner, store), id);
    return { object: 'memory_fact.deleted', id, deleted: true };
  }

  /** Adds one fact (skipped when the same text is already stored); returns it, or undefined when skipped. */
  async addFact(owner: string, store: string, text: string, source: 'user' | 'model' | 'api', signal?: AbortSignal) {
    const s = await getMemoryStore(this.db, owner, store);
    if (!s) throw new ServiceError(404, 'not_found', `memory store "${store}" not found`);
    const clean = text.trim();
    if (!clean || clean.length > MAX_FACT_CHARS) throw bad('text', `must be 1-${MAX_FACT_CHARS} characters`);
    if (await findFactByText(this.db, owner, store, clean)) return undefined;
    const row = { id: `fact_${randomId(20)}`, owner, store, text: clean, source, created_at: Date.now() };
    await insertFact(this.db, row);
    const index = indexOf(owner, store);
    await this.retrieval.addDocument(index, row.id, [{ position: 0, text: clean, meta: {} }]);
    const model = await this.#model(s);
    // without an embedding model the fact is still found by its words (full-text side)
    if (model) await this.retrieval.embedDocument(index, row.id, model, signal);
    return this.#factView(row);
  }

  async #model(s: MemoryStoreTable) {
    return s.embedding_model ?? (await this.defaultModel());
  }

  /** A store named in a chat request: the key's own, or 400 naming it. */
  async requireStore(owner: string, name: string) {
    const s = await getMemoryStore(this.db, owner, name);
    if (!s) throw bad('memory_store', `unknown memory store "${name}"`);
    return s;
  }

  /** The store's facts most relevant to `query`, best first. */
  async recall(owner: string, store: string, query: string, signal?: AbortSignal): Promise<Fact[]> {
    const s = await this.requireStore(owner, store);
    if (!query.trim()) return [];
    const model = await this.#model(s);
    const hits = await this.retrieval.search([indexOf(owner, store)], query, {
      limit: RECALL_LIMIT,
      mode: model ? 'hybrid' : 'keyword',
      model: model || undefined,
      signal,
    });
    const rows = new Map((await factsByIds(this.db, hits.map((h) => h.chunk.doc_id))).map((r) => [r.id, r]));
    return hits.map((h) => rows.get(h.chunk.doc_id)).filter((r): r is MemoryFactTable => !!r && r.owner === owner).map((r) => ({
      id: r.id,
      text: r.text,
    }));
  }

  /** Writes back facts (by default those the user stated in `message`); returns those newly stored. */
  async remember(
    owner: string,
    store: string,
    message: string,
    signal?: AbortSignal,
    facts = factsStated(message),
    source: 'user' | 'model' = 'user',
  ): Promise<Fact[]> {
    const out: Fact[] = [];
    for (const text of facts) {
      if (!text.trim() || text.trim().length > MAX_FACT_CHARS) continue;
      const f = await this.addFact(owner, store, text, source, signal);
      if (f) out.push({ id: f.id, text: f.text });
    }
    return out;
  }

  getFact = (owner: string, store: string, id: string) => getFact(this.db, owner, store, id);
}
