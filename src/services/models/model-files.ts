/**
 * A downloaded model's files, read back in the hub's own layout (`<name>/resolve/<revision>/<path>`), so
 * transformers.js in a browser can load the very model the server runs, with the server as its hub.
 * Only files of the model's complete local copy (its manifest) are served: nothing else under the models
 * folder is reachable, and a model that is not downloaded is 404.
 */
import { join } from 'node:path';
import { ServiceError } from '../errors.ts';
import type { ModelAdminContext } from './manage.ts';
import { readLocalCopy } from './manifest.ts';
import { modelNotFound, resolveModel } from './resolve.ts';
import { isSafeRepoPath } from './files.ts';
import { type Dtype, DTYPES } from './spec.ts';

export interface ModelFileList {
  name: string;
  repo: string;
  dtype: Dtype;
  kind: string;
  revision: string;
  files: { path: string; size: number; sha256: string }[];
}

type Ctx = Pick<ModelAdminContext, 'catalog' | 'registry' | 'layout'>;

/** The model's local copy: its dtype and files (404 when unknown or not downloaded). */
export async function modelFileList(ctx: Ctx, name: string): Promise<ModelFileList & { dir: string }> {
  const r = await resolveModel(name, ctx.catalog, ctx.registry);
  if (r.source === 'hub') throw modelNotFound(name);
  const local = await readLocalCopy(ctx.layout, r.spec.repo, r.spec.dtype);
  if (!local) throw new ServiceError(404, 'not_found', `model '${name}' is not downloaded; pull it first`);
  return {
    name: r.spec.name,
    repo: r.spec.repo,
    dtype: r.spec.dtype,
    kind: r.spec.kind,
    revision: local.manifest.revision,
    dir: local.dir,
    files: local.manifest.files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256 })),
  };
}

/**
 * The absolute path and size of one file of a downloaded repository (`owner/repo`, as transformers.js names
 * it: a model name such as `tiny-llama:test` is no valid hub id there). Any complete variant (dtype) of the
 * repository may hold it; a file no manifest lists is 404.
 */
export async function modelRepoFile(ctx: Ctx, repo: string, path: string): Promise<{ path: string; size: number }> {
  const notFound = () => new ServiceError(404, 'not_found', `no downloaded model '${repo}' has a file '${path}'`);
  if (!/^[\w.-]+\/[\w.-]+$/.test(repo) || repo.split('/').some((p) => p.startsWith('.')) || !isSafeRepoPath(path)) throw notFound();
  for (const dtype of DTYPES) {
    const local = await readLocalCopy(ctx.layout, repo, dtype);
    const f = local?.manifest.files.find((x) => x.path === path);
    if (local && f) return { path: join(local.dir, ...f.path.split('/')), size: f.size };
  }
  throw notFound();
}
