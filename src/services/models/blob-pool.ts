/**
 * Verified downloads waiting in `.partial/blobs/`, shared between pulls: two pulls that need the same
 * content (the same config.json for two dtypes) download it once. Reference-counted so a blob is removed
 * only when no pull still needs it.
 */
import { rm } from 'node:fs/promises';
import type { DownloadedFile } from './download.ts';
import type { ModelStoreLayout } from './layout.ts';

interface Entry {
  users: number;
  download?: Promise<DownloadedFile>;
}

export class BlobPool {
  readonly #entries = new Map<string, Entry>();

  constructor(readonly layout: ModelStoreLayout) {}

  acquire(key: string): void {
    const e = this.#entries.get(key) ?? { users: 0 };
    e.users++;
    this.#entries.set(key, e);
  }

  /** Runs `fetch` once per key while users hold it; later callers share the result. */
  get(key: string, fetch: () => Promise<DownloadedFile>): Promise<DownloadedFile> {
    const e = this.#entries.get(key);
    if (!e) throw new Error(`blob ${key} not acquired`);
    if (!e.download) {
      e.download = fetch();
      // A failed download is retried by the next caller, not replayed.
      e.download.catch(() => {
        if (this.#entries.get(key) === e) e.download = undefined;
      });
    }
    return e.download;
  }

  /**
   * `keep`: leave the verified blob for a later resume (the pull failed for a transient reason).
   * `discard`: also remove the partial (its bytes are wrong).
   */
  async release(key: string, mode: 'consumed' | 'keep' | 'discard'): Promise<void> {
    const e = this.#entries.get(key);
    if (!e) return;
    if (--e.users > 0) return;
    this.#entries.delete(key);
    if (mode === 'keep') return;
    await rm(this.layout.blobDone(key), { force: true });
    if (mode === 'discard') await rm(this.layout.blobPartial(key), { force: true });
  }
}
