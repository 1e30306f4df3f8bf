/**
 * Name → model: a catalog entry, a recorded custom model, or a hub reference not imported yet.
 * Anything else is a 404 `model 'x' not found`.
 */
import { invalidArgument, ServiceError } from '../errors.ts';
import type { Catalog } from './catalog.ts';
import { asHubReference, type HubReference, parseModelName } from './names.ts';
import type { ModelRegistryStore } from './registry-store.ts';
import { type CatalogEntry, type CustomModelRecord, type Dtype, DTYPES, isDtype } from './spec.ts';

export type ResolvedModel =
  | { source: 'catalog'; spec: CatalogEntry }
  | { source: 'custom'; spec: CustomModelRecord }
  | { source: 'hub'; name: string; ref: HubReference; dtype?: Dtype };

export const modelNotFound = (name: string) => new ServiceError(404, 'not_found', `model '${name}' not found`);

export async function resolveModel(name: string, catalog: Catalog, registry: ModelRegistryStore): Promise<ResolvedModel> {
  const parsed = parseModelName(name);
  const entry = catalog.resolve(name);
  if (entry) return { source: 'catalog', spec: entry };
  const custom = await registry.get(name);
  if (custom) return { source: 'custom', spec: custom };
  const ref = asHubReference(parsed);
  if (ref) return { source: 'hub', name: `${ref.host}/${ref.owner}/${ref.repo}:${ref.quant}`, ref, dtype: quantToDtype(ref.quant) };
  throw modelNotFound(name);
}

/** A hub reference's `:<quant>`: an ONNX dtype; `latest` (no quant) lets the repository's files decide. */
export function quantToDtype(quant: string): Dtype | undefined {
  const q = quant.toLowerCase();
  if (q === 'latest') return undefined;
  if (q === 'quantized') return 'q8';
  if (isDtype(q)) return q;
  throw invalidArgument(`'${quant}' is not an ONNX dtype; use one of ${DTYPES.join(', ')}`);
}
