/** Admin settings stored in the database and changeable at run time (admin console "General"). */
import { readSetting, writeSetting } from '../../store/settings.ts';
import type { Db } from '../../store/schema.ts';
import { invalidArgument } from '../errors.ts';

const SYNC_TIMEOUT = 'sync_timeout_seconds';
const CACHE_MS = 2000; // other nodes of a fleet see a change within this

export interface AdminSettingsView { sync_timeout_seconds: number }

export class AdminSettings {
  #syncTimeout: { value: number; at: number } | null = null;

  constructor(private db: Db) {}

  async syncTimeoutSeconds(): Promise<number> {
    const now = Date.now();
    if (!this.#syncTimeout || now - this.#syncTimeout.at > CACHE_MS) this.#syncTimeout = { value: await readSetting(this.db, SYNC_TIMEOUT, 0), at: now };
    return this.#syncTimeout.value;
  }

  async view(): Promise<AdminSettingsView> {
    return { sync_timeout_seconds: await this.syncTimeoutSeconds() };
  }

  async update(patch: Partial<AdminSettingsView>): Promise<AdminSettingsView> {
    if (patch.sync_timeout_seconds !== undefined) {
      const n = patch.sync_timeout_seconds;
      if (!Number.isInteger(n) || n < 0 || n > 86_400) throw invalidArgument('sync_timeout_seconds must be an integer from 0 to 86400', [{ field: 'sync_timeout_seconds', message: 'out of range' }]);
      await writeSetting(this.db, SYNC_TIMEOUT, n);
      this.#syncTimeout = { value: n, at: Date.now() };
    }
    return this.view();
  }
}
