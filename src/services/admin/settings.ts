/** Admin settings stored in the database and changeable at run time (admin console "General"). */
import { readSetting, writeSetting } from '../../store/settings.ts';
import type { Db } from '../../store/schema.ts';
import { invalidArgument } from '../errors.ts';

const SYNC_TIMEOUT = 'sync_timeout_seconds';
const EMBEDDING_MODEL = 'default_embedding_model';
const CACHE_MS = 2000; // other nodes of a fleet see a change within this

export interface AdminSettingsView {
  sync_timeout_seconds: number;
  /** Embedding model of vector stores that name none (pulled on demand); '' = none configured. */
  default_embedding_model: string;
}

export class AdminSettings {
  #syncTimeout: { value: number; at: number } | null = null;
  #embeddingModel: { value: string; at: number } | null = null;

  /** `defaultEmbeddingModel`: the start flag's value, used until an administrator sets one. */
  constructor(private db: Db, private defaultEmbeddingModelFlag = '') {}

  async defaultEmbeddingModel(): Promise<string> {
    const now = Date.now();
    if (!this.#embeddingModel || now - this.#embeddingModel.at > CACHE_MS) {
      this.#embeddingModel = { value: await readSetting(this.db, EMBEDDING_MODEL, this.defaultEmbeddingModelFlag), at: now };
    }
    return this.#embeddingModel.value;
  }

  async syncTimeoutSeconds(): Promise<number> {
    const now = Date.now();
    if (!this.#syncTimeout || now - this.#syncTimeout.at > CACHE_MS) {
      this.#syncTimeout = { value: await readSetting(this.db, SYNC_TIMEOUT, 0), at: now };
    }
    return this.#syncTimeout.value;
  }

  async view(): Promise<AdminSettingsView> {
    return { sync_timeout_seconds: await this.syncTimeoutSeconds(), default_embedding_model: await this.defaultEmbeddingModel() };
  }

  async update(patch: Partial<AdminSettingsView>): Promise<AdminSettingsView> {
    if (patch.sync_timeout_seconds !== undefined) {
      const n = patch.sync_timeout_seconds;
      if (!Number.isInteger(n) || n < 0 || n > 86_400) {
        throw invalidArgument('sync_timeout_seconds must be an integer from 0 to 86400', [{
          field: 'sync_timeout_seconds',
          message: 'out of range',
        }]);
      }
      await writeSetting(this.db, SYNC_TIMEOUT, n);
      this.#syncTimeout = { value: n, at: Date.now() };
    }
    if (patch.default_embedding_model !== undefined) {
      const m = patch.default_embedding_model;
      if (typeof m !== 'string' || m.length > 300) {
        throw invalidArgument('default_embedding_model must be a model name', [{ field: 'default_embedding_model', message: 'invalid' }]);
      }
      await writeSetting(this.db, EMBEDDING_MODEL, m.trim());
      this.#embeddingModel = { value: m.trim(), at: Date.now() };
    }
    return this.view();
  }
}
