/**
 * Uploaded files: streamed to disk (never buffered whole), private to the uploading owner, expiring after
 * the configured retention. A refused or broken upload leaves nothing behind: bytes go to a partial file
 * that is renamed into place only when complete, and the row is written last.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { randomId } from '../../ids.ts';
import {
  deleteFileRow,
  expiredFiles,
  type FileRow,
  filesOfPurposeUnder,
  getFileRow,
  insertFile,
  listFileRows,
  setFilePurpose,
} from '../../store/files.ts';
import type { Db } from '../../store/schema.ts';
import { notFound } from '../errors.ts';

export type StoredFile = FileRow;

export interface FileMeta {
  filename: string;
  contentType?: string;
  purpose?: string;
}

/** The purpose of a task's inline input (base64 or multipart): removed when the task ends. */
export const TASK_INPUT = 'task-input';

export class FileStore {
  /** Where this node's uploads in progress go: per node, since fleet nodes may share one files directory. */
  readonly #partials: string;
  /** Where this node's task inputs go, so that its start-up sweep of orphans never touches another node's. */
  readonly #inputs: string;

  constructor(private db: Db, readonly dir: string, private retentionSeconds: number, nodeTag = '') {
    this.#partials = nodeTag ? join(dir, '.partial', nodeTag) : join(dir, '.partial');
    this.#inputs = nodeTag ? join(dir, '.inputs', nodeTag) : dir;
  }

  async init(): Promise<void> {
    await mkdir(this.#inputs, { recursive: true });
    await mkdir(this.#partials, { recursive: true });
    // Partial files of this node's previous process are never completed: remove them (not other nodes').
    await rm(this.#partials, { recursive: true, force: true });
    await mkdir(this.#partials, { recursive: true });
  }

  /** Streams chunks to a new file; on any error (limit, disconnect) the partial file is removed and the error rethrown. */
  async saveStream(ownerId: string, chunks: AsyncIterable<Uint8Array>, meta: FileMeta): Promise<StoredFile> {
    const id = `file-${randomId(24)}`;
    const partial = join(this.#partials, id);
    const out = createWriteStream(partial);
    let bytes = 0;
    try {
      for await (const chunk of chunks) {
        bytes += chunk.byteLength;
        if (!out.write(chunk)) {
          await new Promise<void>((r, j) => {
            out.once('drain', r);
            out.once('error', j);
          });
        }
      }
      await new Promise<void>((r, j) => out.end((err?: Error | null) => (err ? j(err) : r())));
      return await this.#commit(ownerId, id, partial, bytes, meta);
    } catch (e) {
      out.destroy();
      await rm(partial, { force: true });
      throw e;
    }
  }

  async saveBytes(ownerId: string, data: Uint8Array, meta: FileMeta): Promise<StoredFile> {
    return this.saveStream(
      ownerId,
      (async function* () {
        yield data;
      })(),
      meta,
    );
  }

  async #commit(ownerId: string, id: string, partial: string, bytes: number, meta: FileMeta): Promise<StoredFile> {
    const path = join(meta.purpose === TASK_INPUT ? this.#inputs : this.dir, id);
    await rename(partial, path);
    const now = Date.now();
    const row: StoredFile = {
      id,
      owner_id: ownerId,
      filename: meta.filename || 'upload',
      purpose: meta.purpose ?? 'task',
      bytes,
      content_type: meta.contentType || 'application/octet-stream',
      path,
      created_at: now,
      expires_at: now + this.retentionSeconds * 1000,
    };
    try {
      await insertFile(this.db, row);
    } catch (e) {
      await rm(path, { force: true });
      throw e;
    }
    return row;
  }

  /** The file's record; 404 when unknown, expired or another owner's. */
  async get(ownerId: string, id: string): Promise<StoredFile> {
    const row = await getFileRow(this.db, id);
    if (!row || row.owner_id !== ownerId) throw notFound(`file '${id}' not found`);
    if (Number(row.expires_at) <= Date.now()) {
      await this.#remove(row.id, row.path);
      throw notFound(`file '${id}' not found (expired)`);
    }
    try {
      await stat(row.path);
    } catch {
      throw notFound(`file '${id}' not found`);
    }
    return row;
  }

  async list(ownerId: string): Promise<StoredFile[]> {
    return listFileRows(this.db, ownerId, Date.now());
  }

  async setPurpose(ownerId: string, id: string, purpose: string): Promise<StoredFile> {
    await setFilePurpose(this.db, id, purpose);
    return this.get(ownerId, id);
  }

  async read(ownerId: string, id: string): Promise<Uint8Array> {
    return new Uint8Array(await readFile((await this.get(ownerId, id)).path));
  }

  async #remove(id: string, path: string): Promise<void> {
    await deleteFileRow(this.db, id);
    await rm(path, { force: true });
  }

  async delete(ownerId: string, id: string): Promise<void> {
    const row = await this.get(ownerId, id);
    await this.#remove(row.id, row.path);
  }

  /**
   * Inline inputs left by tasks of a previous process of this node (killed before its cleanup ran): nothing
   * can use them any more. Run at start, before this process accepts tasks.
   */
  async sweepOrphanInputs(): Promise<number> {
    const rows = await filesOfPurposeUnder(this.db, TASK_INPUT, this.#inputs === this.dir ? this.dir : `${this.#inputs}/`);
    for (const r of rows) await this.#remove(r.id, r.path);
    return rows.length;
  }

  async sweep(now = Date.now()): Promise<number> {
    const rows = await expiredFiles(this.db, now);
    for (const r of rows) await this.#remove(r.id, r.path);
    return rows.length;
  }
}
