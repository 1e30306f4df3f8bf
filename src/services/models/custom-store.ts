/**
 * Files of created and copied models. Each such model has its own directory in the hub layout, so the
 * engine loads it like any pulled model, and its own manifest:
 *
 *   <modelsDir>/.custom/<slug>-<random>/...                     config.json, tokenizer*.json, onnx/*.onnx
 *   <modelsDir>/.manifests/.custom/<slug>-<random>/<dtype>.json  written last
 *
 * Artifacts are hard links to the blob store or to the source model's files: the bytes exist once on
 * disk, and removing one name (one set of links) leaves every other name working. Where the filesystem
 * refuses a link (another device), the file is copied; the model directory is on one filesystem in
 * practice, so this does not happen with the default layout.
 */
import { copyFile, link, mkdir, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ModelStoreLayout } from './layout.ts';
import { type ManifestFile, readLocalCopy, writeManifest } from './manifest.ts';
import { type Dtype, DTYPES } from './spec.ts';
import { randomId } from '../../ids.ts';

export const CUSTOM_OWNER = '.custom';

export const isCustomRepo = (repo: string) => repo.startsWith(`${CUSTOM_OWNER}/`);

/** A fresh repository id for a created/copied model: readable slug of the name plus a random suffix. */
export function newCustomRepo(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(0, 80) || 'model';
  return `${CUSTOM_OWNER}/${slug}-${randomId(8)}`;
}

export async function linkOrCopy(src: string, dst: string): Promise<void> {
  await mkdir(dirname(dst), { recursive: true });
  try {
    await link(src, dst);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      await rm(dst, { force: true });
      return linkOrCopy(src, dst);
    }
    await copyFile(src, dst);
  }
}

/** Renames an assembled stage directory into place as `repo` and writes its manifest (last). */
export async function installCustom(
  layout: ModelStoreLayout,
  repo: string,
  stage: string,
  dtype: Dtype,
  files: ManifestFile[],
): Promise<void> {
  const dir = layout.modelDir(repo);
  await mkdir(dirname(dir), { recursive: true });
  await rename(stage, dir);
  await writeManifest(layout, { schema: 1, repo, revision: 'local', dtype, files, pulled_at: new Date().toISOString() });
}

/**
 * Removes one variant's files. Paths that another dtype's manifest of the same repository lists stay
 * (pulled variants share config.json and the tokenizer). The manifest goes first, so a half-removed
 * variant is never listed as local. A created/copied model's directory is removed whole.
 */
export async function removeVariant(layout: ModelStoreLayout, repo: string, dtype: Dtype): Promise<void> {
  const manifestPath = layout.manifestPath(repo, dtype);
  const copy = await readLocalCopy(layout, repo, dtype);
  await rm(manifestPath, { force: true });
  const dir = layout.modelDir(repo);
  if (isCustomRepo(repo)) {
    await rm(dir, { recursive: true, force: true });
  } else if (copy) {
    const kept = new Set<string>();
    for (const d of DTYPES) {
      if (d === dtype) continue;
      const other = await readLocalCopy(layout, repo, d);
      for (const f of other?.manifest.files ?? []) kept.add(f.path);
    }
    for (const f of copy.manifest.files) if (!kept.has(f.path)) await rm(join(dir, f.path), { force: true });
    await pruneEmptyDirs(dir, layout.root);
  }
  await pruneEmptyDirs(dirname(manifestPath), layout.root);
}

/** Removes empty directories from `dir` up to (not including) `root`. */
async function pruneEmptyDirs(dir: string, root: string): Promise<void> {
  const walk = async (d: string): Promise<boolean> => {
    const st = await stat(d).catch(() => undefined);
    if (!st) return true;
    if (!st.isDirectory()) return false;
    let empty = true;
    for (const n of await readdir(d)) {
      if (!(await walk(join(d, n)))) empty = false;
    }
    if (empty && d !== root) {
      await rmdir(d).catch(() => {
        empty = false;
      });
    }
    return empty;
  };
  await walk(dir);
  for (let d = dirname(dir); d.startsWith(root) && d !== root; d = dirname(d)) {
    if (!(await rmdir(d).then(() => true, () => false))) break;
  }
}
