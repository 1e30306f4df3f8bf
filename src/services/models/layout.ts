/**
 * Where models live on disk. Hub owners cannot start with '.', so the server's own folders are
 * dot-prefixed and never collide with a repository:
 *
 *   <modelsDir>/<owner>/<repo>/...                 model files in the hub's layout (what transformers.js loads)
 *   <modelsDir>/.manifests/<owner>/<repo>/<dtype>.json  written last: its presence means "complete"
 *   <modelsDir>/.registry/<name>.json               custom (imported) model records
 *   <modelsDir>/.partial/blobs/<key>.part           downloads in progress (resumable)
 *   <modelsDir>/.partial/blobs/<key>                verified downloads waiting to be moved in
 *   <modelsDir>/.partial/stage-<random>/            a new model directory being assembled
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServiceError } from '../errors.ts';
import type { Dtype } from './spec.ts';
import { randomId } from '../../ids.ts';

export class ModelStoreLayout {
  constructor(readonly root: string) {}

  modelDir(repo: string): string {
    return join(this.root, ...repo.split('/'));
  }
  manifestPath(repo: string, dtype: Dtype): string {
    return join(this.root, '.manifests', ...repo.split('/'), `${dtype}.json`);
  }
  get registryDir(): string {
    return join(this.root, '.registry');
  }
  get partialDir(): string {
    return join(this.root, '.partial');
  }
  blobPartial(key: string): string {
    return join(this.partialDir, 'blobs', `${key}.part`);
  }
  blobDone(key: string): string {
    return join(this.partialDir, 'blobs', key);
  }
  newStageDir(): string {
    return join(this.partialDir, `stage-${randomId(10)}`);
  }

  /** Removes `stage-*` folders: only a process that died while installing leaves them. */
  async sweepStages(): Promise<void> {
    const names = await readdir(this.partialDir).catch(() => [] as string[]);
    for (const n of names) if (n.startsWith('stage-')) await rm(join(this.partialDir, n), { recursive: true, force: true });
  }

  /** Imports need a writable store; probe by writing, since permission bits lie to root. */
  async assertWritable(): Promise<void> {
    const probe = join(this.partialDir, `.probe-${randomId(8)}`);
    try {
      await mkdir(join(this.partialDir, 'blobs'), { recursive: true });
      await writeFile(probe, '');
      await rm(probe, { force: true });
    } catch (err) {
      throw readOnlyError(err) ?? err;
    }
  }
}

const READ_ONLY_CODES = new Set(['EROFS', 'EACCES', 'EPERM']);

/** A filesystem error meaning "cannot write here" becomes 503 model_store_read_only (docs/models.md). */
export function readOnlyError(err: unknown): ServiceError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (!code || !READ_ONLY_CODES.has(code)) return undefined;
  return new ServiceError(503, 'model_store_read_only', 'the model directory is read-only; model imports are not possible', {
    headers: { 'Retry-After': '5' },
    cause: err,
  });
}
