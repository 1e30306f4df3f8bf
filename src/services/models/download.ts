/**
 * Downloads one hub file into a partial file, resumable and verified while it streams:
 * an existing partial is hashed first and continued with a Range request; a server that ignores Range
 * restarts the file from zero. The result is checked against the hub-declared size, LFS sha256 and git
 * blob id; a mismatch deletes the partial. Large files never sit in memory.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rm, stat, truncate } from 'node:fs/promises';
import { ServiceError } from '../errors.ts';
import { badUpstream, type HubClient, type HubSibling, upstream } from './hub.ts';

export interface DownloadFileOptions {
  hub: HubClient;
  url: URL;
  file: HubSibling;
  /** Where the bytes accumulate; kept on transient failure so the next attempt resumes. */
  partialPath: string;
  onProgress?: (completed: number, total: number | undefined) => void;
  signal?: AbortSignal;
  /** A transfer that delivers nothing for this long counts as interrupted (and is resumed). Default 60 s. */
  idleTimeoutMs?: number;
}

export interface DownloadedFile {
  sha256: string;
  size: number;
}

/** Hashes both ways the hub declares content: sha256 (LFS) and the git blob id (sha1 over a header). */
class ContentHash {
  readonly sha256: Hash = createHash('sha256');
  readonly sha1?: Hash;
  size = 0;
  constructor(declaredSize: number | undefined, wantGit: boolean) {
    if (wantGit && declaredSize !== undefined) {
      this.sha1 = createHash('sha1');
      this.sha1.update(`blob ${declaredSize}\0`);
    }
  }
  update(chunk: Uint8Array) {
    this.sha256.update(chunk);
    this.sha1?.update(chunk);
    this.size += chunk.byteLength;
  }
}

export const declaredSize = (f: HubSibling) => f.lfs?.size ?? f.size;

export async function downloadFile(opts: DownloadFileOptions): Promise<DownloadedFile> {
  const { file, partialPath } = opts;
  const total = declaredSize(file);
  const wantGit = !file.lfs && !!file.blobId;

  let hash = new ContentHash(total, wantGit);
  let offset = (await stat(partialPath).catch(() => undefined))?.size ?? 0;
  if (total !== undefined && offset > total) {
    await truncate(partialPath, 0);
    offset = 0;
  }
  if (offset > 0) await hashExisting(partialPath, hash);

  if (total === undefined || offset < total) {
    let res = await opts.hub.getFile(opts.url, offset, opts.signal);
    if (offset > 0 && res.status === 416) {
      // Our partial does not fit the file the hub has now: start over.
      await res.body?.cancel();
      await truncate(partialPath, 0);
      offset = 0;
      hash = new ContentHash(total, wantGit);
      res = await opts.hub.getFile(opts.url, 0, opts.signal);
    }
    if (res.status === 404) {
      await res.body?.cancel();
      throw new ServiceError(404, 'not_found', `file '${file.rfilename}' not found on the hub`);
    }
    if (res.status !== 200 && res.status !== 206) {
      await res.body?.cancel();
      throw (res.status >= 500 || res.status === 429 ? upstream : badUpstream)(
        `the model hub answered ${res.status} for '${file.rfilename}'`,
      );
    }
    if (offset > 0 && (res.status === 200 || rangeStart(res) !== offset)) {
      // Range ignored (or answered for another start): the body is the whole file.
      await truncate(partialPath, 0);
      offset = 0;
      hash = new ContentHash(total, wantGit);
    }
    opts.onProgress?.(hash.size, total);
    await appendBody(res, partialPath, hash, opts);
  }

  const sha256 = hash.sha256.digest('hex');
  const problem = total !== undefined && hash.size !== total
    ? `size ${hash.size} != declared ${total}`
    : file.lfs && sha256 !== file.lfs.sha256.toLowerCase()
    ? `sha256 ${sha256} != declared ${file.lfs.sha256}`
    : hash.sha1 && hash.sha1.digest('hex') !== file.blobId!.toLowerCase()
    ? `git blob id differs from declared ${file.blobId}`
    : undefined;
  if (problem) {
    await rm(partialPath, { force: true });
    // Not a client fault: the bytes the hub (or the path to it) delivered are wrong: a bad gateway answer.
    throw new ServiceError(502, 'digest_mismatch', `downloaded '${file.rfilename}' does not match the hub's digest (${problem})`);
  }
  return { sha256, size: hash.size };
}

/** sha256 of a file on disk, streamed. */
export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

async function hashExisting(path: string, hash: ContentHash): Promise<void> {
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
}

function rangeStart(res: Response): number | undefined {
  const m = /^bytes\s+(\d+)-/i.exec(res.headers.get('content-range') ?? '');
  return m ? Number(m[1]) : undefined;
}

async function appendBody(res: Response, path: string, hash: ContentHash, opts: DownloadFileOptions): Promise<void> {
  const total = declaredSize(opts.file);
  const fh = await open(path, hash.size === 0 ? 'w' : 'a');
  try {
    if (!res.body) return;
    const reader = res.body.getReader();
    let finished = false;
    try {
      for (;;) {
        let step: ReadableStreamReadResult<Uint8Array>;
        let idle: ReturnType<typeof setTimeout> | undefined;
        try {
          const ms = opts.idleTimeoutMs ?? 60_000;
          step = await Promise.race([
            reader.read(),
            new Promise<never>((_, reject) => {
              idle = setTimeout(() => reject(new Error(`no data for ${ms} ms`)), ms);
            }),
          ]);
        } catch (err) {
          if (opts.signal?.aborted) throw err;
          throw upstream(`download of '${opts.file.rfilename}' was interrupted (${(err as Error).message})`, err);
        } finally {
          clearTimeout(idle);
        }
        if (step.done) {
          finished = true;
          break;
        }
        await fh.write(step.value);
        hash.update(step.value);
        opts.onProgress?.(hash.size, total);
      }
    } finally {
      // On any failure (disk, abort) stop the transfer instead of leaving the socket open.
      if (!finished) await reader.cancel().catch(() => {});
    }
  } finally {
    await fh.close();
  }
}
