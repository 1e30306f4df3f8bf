/**
 * The content-addressed blob store of dialect B (`/api/blobs/sha256:<hex>`), shared by every model:
 *
 *   <modelsDir>/.blobs/sha256-<hex>        a stored blob (its name is the SHA-256 of its bytes)
 *   <modelsDir>/.blobs/.incoming-<random>  an upload in progress (never visible under a digest name)
 *
 * An upload streams to the incoming file while it is hashed; only when the digest matches is the file
 * renamed to its name. A mismatch, a body over the upload limit or a broken connection removes the
 * incoming file: nothing is left behind. Models created from blobs hard-link them, so a blob is stored once.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { invalidArgument, ServiceError } from '../errors.ts';
import { readOnlyError } from './layout.ts';
import { randomId } from '../../ids.ts';

const DIGEST = /^sha256[:-]([0-9a-f]{64})$/;

/** `sha256:<hex>` (Ollama also accepts `sha256-<hex>`) → the hex; 400 for anything else. */
export function parseBlobDigest(digest: string): string {
  const m = DIGEST.exec(digest.trim().toLowerCase());
  if (!m) throw invalidArgument(`invalid digest '${digest}': expected sha256:<64 hex digits>`);
  return m[1];
}

export const blobNotFound = (digest: string) =>
  new ServiceError(400, 'invalid_argument', `blob ${digest} not found: push it first with POST /api/blobs/${digest}`);

export class BlobStore {
  constructor(readonly dir: string) {}

  path(digest: string): string {
    return join(this.dir, `sha256-${parseBlobDigest(digest)}`);
  }

  async has(digest: string): Promise<boolean> {
    const st = await stat(this.path(digest)).catch(() => undefined);
    return !!st?.isFile();
  }

  /** Size of a stored blob; undefined when absent. */
  async size(digest: string): Promise<number | undefined> {
    const st = await stat(this.path(digest)).catch(() => undefined);
    return st?.isFile() ? st.size : undefined;
  }

  /**
   * Stores the chunks under `digest`, hashing while writing. Returns `created: false` when the blob was
   * already there (the body is still read and checked). Throws 400 `digest_mismatch` when the bytes do
   * not hash to the digest, and rethrows whatever the chunk source throws (413, disconnect); either way
   * the partial file is removed.
   */
  async put(digest: string, chunks: AsyncIterable<Uint8Array>): Promise<{ size: number; created: boolean }> {
    const hex = parseBlobDigest(digest);
    const final = join(this.dir, `sha256-${hex}`);
    const incoming = join(this.dir, `.incoming-${randomId(10)}`);
    try {
      await mkdir(this.dir, { recursive: true });
    } catch (err) {
      throw readOnlyError(err) ?? err;
    }
    const hash = createHash('sha256');
    let size = 0;
    const out = createWriteStream(incoming, { flags: 'wx' });
    const failed = new Promise<never>((_, reject) => out.once('error', reject));
    failed.catch(() => {});
    try {
      for await (const chunk of chunks) {
        hash.update(chunk);
        size += chunk.byteLength;
        if (!out.write(chunk)) await Promise.race([new Promise((r) => out.once('drain', r)), failed]);
      }
      await Promise.race([new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r()))), failed]);
      const got = hash.digest('hex');
      if (got !== hex) {
        throw new ServiceError(
          400,
          'digest_mismatch',
          `digest mismatch: the body's SHA-256 is sha256:${got}, not sha256:${hex}; nothing was stored`,
        );
      }
      const existed = await this.has(digest);
      await rename(incoming, final);
      return { size, created: !existed };
    } catch (err) {
      out.destroy();
      await rm(incoming, { force: true });
      throw readOnlyError(err) ?? err;
    }
  }
}
