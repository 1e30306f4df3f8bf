/**
 * Copy and delete of models (dialect B `/api/copy`, `/api/delete`), and what create shares with them:
 * the context, destination-name rules, a per-name lock, and the rule for when files may go.
 *
 * - Copy makes a new custom model whose files are hard links to the source's: nothing is duplicated, and
 *   deleting either name leaves the other complete.
 * - Delete removes downloaded files only. A catalog entry stays listed (without a local copy); a custom
 *   model's name goes with its files. A loaded model is unloaded first; one serving requests is refused
 *   with 409 `model_in_use`. Files another listed name still uses (the same repository and dtype) stay.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { invalidArgument, ServiceError } from '../errors.ts';
import type { BlobStore } from './blobs.ts';
import type { Catalog } from './catalog.ts';
import { installCustom, isCustomRepo, linkOrCopy, newCustomRepo, removeVariant } from './custom-store.ts';
import type { ModelStoreLayout } from './layout.ts';
import { readLocalCopy } from './manifest.ts';
import { displayName, nameKey, parseModelName } from './names.ts';
import type { PullService } from './pull.ts';
import type { ModelRegistryStore } from './registry-store.ts';
import { modelNotFound, resolveModel } from './resolve.ts';
import type { CustomModelRecord, ModelSpec } from './spec.ts';
import type { ModelUsage } from './usage.ts';
import { randomId } from '../../ids.ts';

export interface ModelAdminContext {
  catalog: Catalog;
  registry: ModelRegistryStore;
  layout: ModelStoreLayout;
  pulls: PullService;
  blobs: BlobStore;
  usage: ModelUsage;
}

export const modelInUse = (name: string) =>
  new ServiceError(409, 'model_in_use', `model '${name}' is serving requests right now; retry when they have finished`);

/** A name create/copy may write: valid, and not a catalog name (the catalog cannot be shadowed). */
export function destinationName(catalog: Catalog, raw: string, field: string): string {
  if (!raw?.trim()) throw invalidArgument(`${field} is required`, [{ field, message: 'required' }]);
  const name = displayName(parseModelName(raw));
  if (catalog.resolve(name)) {
    throw invalidArgument(`'${raw}' is a catalog model; choose another name for a custom model`, [{ field, message: 'catalog name' }]);
  }
  return name;
}

/** Serializes create/copy/delete of one name. */
export class NameLocks {
  readonly #tails = new Map<string, Promise<unknown>>();

  async run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const key = nameKey(name);
    const prev = this.#tails.get(key) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.#tails.set(key, next);
    try {
      return await next;
    } finally {
      if (this.#tails.get(key) === next) this.#tails.delete(key);
    }
  }
}

/** `.partial/create-*` folders: where create and copy assemble a model (not swept by pulls). */
export const newAssemblyDir = (layout: ModelStoreLayout) => join(layout.partialDir, `create-${randomId(10)}`);

export async function sweepAssemblyDirs(layout: ModelStoreLayout): Promise<void> {
  for (const n of await readdir(layout.partialDir).catch(() => [] as string[])) {
    if (n.startsWith('create-')) await rm(join(layout.partialDir, n), { recursive: true, force: true });
  }
}

/** Whether a listed model other than `except` uses the variant repo+dtype. */
async function variantShared(ctx: ModelAdminContext, spec: ModelSpec, except: string): Promise<boolean> {
  const same = (s: ModelSpec) =>
    s.repo.toLowerCase() === spec.repo.toLowerCase() && s.dtype === spec.dtype && nameKey(s.name) !== nameKey(except);
  return ctx.catalog.list().some(same) || (await ctx.registry.list()).some(same);
}

/** Replaces an older custom model of the same name: unload it and drop its files (if no one else uses them). */
export async function retireReplaced(
  ctx: ModelAdminContext,
  old: CustomModelRecord | undefined,
  current: CustomModelRecord,
): Promise<void> {
  if (!old || (old.repo === current.repo && old.dtype === current.dtype)) return;
  await ctx.usage.unload(old.name);
  if (isCustomRepo(old.repo) && !(await variantShared(ctx, old, old.name))) await removeVariant(ctx.layout, old.repo, old.dtype);
}

/** A record for a new custom model derived from `spec` (catalog-only fields dropped). */
export function derivedRecord(
  spec: ModelSpec,
  fields: Partial<CustomModelRecord> & Pick<CustomModelRecord, 'name' | 'repo' | 'source'>,
): CustomModelRecord {
  const { name: _n, aliases: _a, hub_host: _h, revision: _r, source: _s, unverified: _u, created_at: _c, profile, ...rest } = spec as
    & ModelSpec
    & Partial<CustomModelRecord>
    & { aliases?: string[] };
  return { ...rest, profile, unverified: true, created_at: new Date().toISOString(), ...fields };
}

export async function copyModel(ctx: ModelAdminContext, locks: NameLocks, source: string, destination: string): Promise<CustomModelRecord> {
  if (!source?.trim()) throw invalidArgument('source is required', [{ field: 'source', message: 'required' }]);
  const dest = destinationName(ctx.catalog, destination, 'destination');
  const r = await resolveModel(source, ctx.catalog, ctx.registry);
  if (r.source === 'hub') throw modelNotFound(source);
  const spec = r.spec;
  if (nameKey(spec.name) === nameKey(dest)) throw invalidArgument('source and destination name the same model');
  return locks.run(dest, async () => {
    const local = await readLocalCopy(ctx.layout, spec.repo, spec.dtype);
    if (!local) throw new ServiceError(404, 'not_found', `model '${source}' has no local copy to copy; pull it first`);
    if (ctx.usage.isServing(dest)) throw modelInUse(dest);
    await ctx.layout.assertWritable();
    const old = await ctx.registry.get(dest);
    const repo = newCustomRepo(dest);
    const stage = newAssemblyDir(ctx.layout);
    try {
      for (const f of local.manifest.files) await linkOrCopy(join(local.dir, f.path), join(stage, f.path));
      await installCustom(ctx.layout, repo, stage, spec.dtype, local.manifest.files);
    } catch (err) {
      await rm(stage, { recursive: true, force: true });
      throw err;
    }
    const prior = (spec as Partial<CustomModelRecord>).profile;
    const record = derivedRecord(spec, { name: dest, repo, source: 'copy', profile: { ...prior, parent: spec.name } });
    await ctx.registry.put(record);
    await retireReplaced(ctx, old, record);
    return record;
  });
}

export async function deleteModel(
  ctx: ModelAdminContext,
  locks: NameLocks,
  name: string,
): Promise<{ name: string; removedFiles: boolean }> {
  if (!name?.trim()) throw invalidArgument('model is required', [{ field: 'model', message: 'required' }]);
  const r = await resolveModel(name, ctx.catalog, ctx.registry);
  if (r.source === 'hub') throw modelNotFound(name);
  const spec = r.spec;
  return locks.run(spec.name, async () => {
    const names = [...new Set([spec.name, name])];
    if (names.some((n) => ctx.usage.isServing(n))) throw modelInUse(spec.name);
    const local = await readLocalCopy(ctx.layout, spec.repo, spec.dtype);
    if (r.source === 'catalog' && !local) throw new ServiceError(404, 'not_found', `model '${name}' has no downloaded files to delete`);
    await ctx.layout.assertWritable();
    for (const n of names) await ctx.usage.unload(n);
    if (names.some((n) => ctx.usage.isServing(n))) throw modelInUse(spec.name); // a request arrived meanwhile
    if (r.source === 'custom') await ctx.registry.delete(spec.name);
    let removedFiles = false;
    if (local && !(await variantShared(ctx, spec, spec.name))) {
      await removeVariant(ctx.layout, spec.repo, spec.dtype);
      removedFiles = true;
    }
    return { name: spec.name, removedFiles };
  });
}
