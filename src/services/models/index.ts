/** Public surface of the models service (catalog, pulls, local listing); free of HTTP. */
export { BUILTIN_CATALOG, Catalog } from './catalog.ts';
export { EgressPolicy, DEFAULT_ALLOWED_HOSTS } from './egress.ts';
export { HubClient, type HubModelInfo, type HubSibling } from './hub.ts';
export { ModelStoreLayout } from './layout.ts';
export { listModels, describe, type ListedModel } from './local.ts';
export { readLocalCopy, type ArtifactManifest, type LocalCopy } from './manifest.ts';
export { nameKey, parseModelName, displayName, type ModelName, type HubReference } from './names.ts';
export type { PullProgress } from './progress.ts';
export { PullService, type PullHandle, type PulledModel, type PullServiceOptions } from './pull.ts';
export { JsonFileRegistryStore, type ModelRegistryStore } from './registry-store.ts';
export { resolveModel, type ResolvedModel } from './resolve.ts';
export * from './spec.ts';
