/**
 * The model store's root. Normally the models directory; when that is read-only (a read-only mount, an
 * image layer) and a work directory is configured, the store runs from the work directory instead, which
 * mirrors every file of the read-only models as a symlink: existing models stay listed and usable, and new
 * imports land in the work directory. Without a work directory, imports answer 503 model_store_read_only.
 */
import { lstat, mkdir, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { randomId } from '../../ids.ts';

export interface StoreRoot {
  root: string;
  /** True when the models directory is read-only and the work directory stands in for it. */
  usingWorkDir: boolean;
  /** Files of the read-only directory newly mirrored into the work directory. */
  mirrored: number;
}

export async function isWritableDir(dir: string): Promise<boolean> {
  const probe = join(dir, `.write-probe-${randomId(8)}`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(probe, '');
    await rm(probe, { force: true });
    return true;
  } catch {
    return false;
  }
}

async function* files(dir: string): AsyncGenerator<string> {
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== '.partial') yield* files(p); // unfinished downloads are not models
    } else if (e.isFile() || e.isSymbolicLink()) yield p;
  }
}

export async function modelStoreRoot(modelsDir: string, workDir: string): Promise<StoreRoot> {
  if (!workDir || (await isWritableDir(modelsDir))) return { root: modelsDir, usingWorkDir: false, mirrored: 0 };
  await mkdir(workDir, { recursive: true });
  let mirrored = 0;
  for await (const file of files(modelsDir)) {
    const target = join(workDir, relative(modelsDir, file));
    if (await lstat(target).then(() => true, () => false)) continue; // already mirrored, or replaced by an import
    await mkdir(dirname(target), { recursive: true });
    await symlink(file, target);
    mirrored++;
  }
  return { root: workDir, usingWorkDir: true, mirrored };
}
