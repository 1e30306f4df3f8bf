/** Public surface of the models service (catalog, pulls, local listing); free of HTTP. */
export { BUILTIN_CATALOG, Catalog } from './catalog.ts';
export { DEFAULT_ALLOWED_HOSTS, EgressPolicy } from './egress.ts';
export { HubClient, type HubModelInfo, type HubSibling } from './hub.ts';
export { ModelStoreLayout } from './layout.ts';
export { describe, type ListedModel, listModels } from './local.ts';
export { type ArtifactManifest, type LocalCopy, readLocalCopy } from './manifest.ts';
export { displayName, type HubReference, type ModelName, nameKey, parseModelName } from './names.ts';
export type { PullProgress } from './progress.ts';
export { type PulledModel, type PullHandle, PullService, type PullServiceOptions } from './pull.ts';
export { JsonFileRegistryStore, type ModelRegistryStore } from './registry-store.ts';
export { type ResolvedModel, resolveModel } from './resolve.ts';
export * from './spec.ts';
