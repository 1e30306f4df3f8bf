/**
 * The model listing behind `/api/tags` and `/v1/models`: every catalog entry (downloaded or not) and
 * every custom model, with size, digest and modification time for those that have a complete local copy.
 */
import { createHash } from 'node:crypto';
import type { Catalog } from './catalog.ts';
import type { ModelStoreLayout } from './layout.ts';
import { type LocalCopy, readLocalCopy } from './manifest.ts';
import type { ModelRegistryStore } from './registry-store.ts';
import type { ModelSpec } from './spec.ts';

export interface ListedModel {
  name: string;
  spec: ModelSpec;
  source: 'catalog' | 'custom';
  /** Custom models are marked Unverified (docs/models.md). */
  unverified: boolean;
  /** Whether a complete local copy exists. */
  local: boolean;
  /** Bytes on disk; 0 without a local copy. */
  size: number;
  /**
   * `sha256:` of the local manifest; without a local copy, of the entry's coordinates (repo, revision,
   * dtype), so that every listed model carries a stable digest.
   */
  digest: string;
  /** Only for local copies (`/api/tags` omits modified_at otherwise). */
  modified_at?: Date;
  copy?: LocalCopy;
}

export async function listModels(catalog: Catalog, registry: ModelRegistryStore, layout: ModelStoreLayout): Promise<ListedModel[]> {
  const out: ListedModel[] = [];
  for (const spec of catalog.list()) out.push(await describe(spec, 'catalog', layout));
  const seen = new Set(out.map((m) => m.name.toLowerCase()));
  for (const spec of await registry.list()) {
    if (seen.has(spec.name.toLowerCase())) continue; // a catalog name wins over a stale record
    out.push(await describe(spec, 'custom', layout));
  }
  return out;
}

export async function describe(spec: ModelSpec, source: 'catalog' | 'custom', layout: ModelStoreLayout): Promise<ListedModel> {
  const copy = await readLocalCopy(layout, spec.repo, spec.dtype);
  return {
    name: spec.name,
    spec,
    source,
    unverified: source === 'custom',
    local: !!copy,
    size: copy?.size ?? 0,
    digest: copy?.digest ?? coordinatesDigest(spec),
    ...(copy ? { modified_at: copy.modifiedAt, copy } : {}),
  };
}

const coordinatesDigest = (s: ModelSpec) =>
  `sha256:${createHash('sha256').update(JSON.stringify({ repo: s.repo, revision: s.revision ?? 'main', dtype: s.dtype })).digest('hex')}`;
