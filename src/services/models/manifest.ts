/**
 * The artifact manifest of one model variant (repo + dtype): every file with size and sha256, the hub
 * revision, when it was pulled. Written last, by rename, so its presence means the variant is complete.
 * The model's digest is the sha256 of these bytes, as Ollama's digest is that of its manifest.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ModelStoreLayout } from './layout.ts';
import type { Dtype } from './spec.ts';
import { randomId } from '../../ids.ts';

export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
  /** The hub's git blob id, for non-LFS files: lets a later pull skip an unchanged file. */
  blob_id?: string;
}

export interface ArtifactManifest {
  schema: 1;
  repo: string;
  revision: string;
  dtype: Dtype;
  files: ManifestFile[];
  pulled_at: string;
}

export interface LocalCopy {
  manifest: ArtifactManifest;
  /** `sha256:<hex>` of the manifest bytes. */
  digest: string;
  /** Sum of the files' sizes. */
  size: number;
  modifiedAt: Date;
  /** The model directory (`<modelsDir>/<owner>/<repo>`). */
  dir: string;
}

export async function writeManifest(layout: ModelStoreLayout, m: ArtifactManifest): Promise<void> {
  const file = layout.manifestPath(m.repo, m.dtype);
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${randomId(8)}.tmp`;
  await writeFile(tmp, JSON.stringify(m, null, 2));
  await rename(tmp, file);
}

/**
 * A cheap fingerprint of the variant's manifest (inode, size, mtime; one stat, no read), undefined when
 * there is none. The manifest is written last and replaced by rename on every pull or create, and removed
 * on delete, so the fingerprint changes whenever the variant's files do: caches of what was read from the
 * model directory key on it.
 */
export async function manifestStamp(layout: ModelStoreLayout, repo: string, dtype: Dtype): Promise<string | undefined> {
  const st = await stat(layout.manifestPath(repo, dtype)).catch(() => undefined);
  return st?.isFile() ? `${st.ino}:${st.size}:${st.mtimeMs}` : undefined;
}

/** The variant's local copy, or undefined when it is absent or no longer complete on disk. */
export async function readLocalCopy(layout: ModelStoreLayout, repo: string, dtype: Dtype): Promise<LocalCopy | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(layout.manifestPath(repo, dtype));
  } catch {
    return undefined;
  }
  let manifest: ArtifactManifest;
  try {
    manifest = JSON.parse(bytes.toString('utf8')) as ArtifactManifest;
  } catch {
    return undefined;
  }
  const dir = layout.modelDir(repo);
  for (const f of manifest.files) {
    const st = await stat(join(dir, f.path)).catch(() => undefined);
    if (!st || st.size !== f.size) return undefined;
  }
  return {
    manifest,
    digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
    size: manifest.files.reduce((n, f) => n + f.size, 0),
    modifiedAt: new Date(manifest.pulled_at),
    dir,
  };
}
