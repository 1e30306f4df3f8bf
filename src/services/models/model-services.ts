/**
 * The models service as the routes see it: catalog, custom-model registry, pulls, blobs, and the
 * management operations (show, create, copy, delete), over one model directory. Built once by the
 * composition root. `usage` tells whether a model is loaded or serving; the composition root sets it to
 * the inference engine's residency when the engine is available.
 */
import { join } from 'node:path';
import { BlobStore } from './blobs.ts';
import { Catalog } from './catalog.ts';
import { type CreateRequest, prepareCreate, runCreate } from './create.ts';
import { isCustomRepo } from './custom-store.ts';
import { ModelStoreLayout } from './layout.ts';
import { type ListedModel, listModels } from './local.ts';
import { type ClassifierFile, installClassifier, readClassifier } from './classifier-model.ts';
import { copyModel, deleteModel, type ModelAdminContext, NameLocks, sweepAssemblyDirs } from './manage.ts';
import { readLocalCopy } from './manifest.ts';
import type { PullProgress } from './progress.ts';
import { PullService } from './pull.ts';
import { JsonFileRegistryStore, type ModelRegistryStore } from './registry-store.ts';
import { modelNotFound, resolveModel } from './resolve.ts';
import { showModel, type ShownModel } from './show.ts';
import type { CustomModelRecord } from './spec.ts';
import { type ModelUsage, NO_USAGE } from './usage.ts';

export interface ModelServicesOptions {
  modelsDir: string;
  hubBaseUrl?: string;
  allowedHosts?: readonly string[];
  hubToken?: string;
  catalog?: Catalog;
  usage?: ModelUsage;
  fetch?: typeof fetch;
}

/** What a pull route streams: progress ending with `{status:'success'}`, and the outcome. */
export interface PullStream {
  name: string;
  progress(): AsyncIterableIterator<PullProgress>;
  done: Promise<unknown>;
}

export class ModelServices implements ModelAdminContext {
  readonly catalog: Catalog;
  readonly registry: ModelRegistryStore;
  readonly layout: ModelStoreLayout;
  readonly pulls: PullService;
  readonly blobs: BlobStore;
  usage: ModelUsage;
  readonly #locks = new NameLocks();
  #swept?: Promise<void>;

  constructor(opts: ModelServicesOptions) {
    this.layout = new ModelStoreLayout(opts.modelsDir);
    this.catalog = opts.catalog ?? new Catalog();
    this.registry = new JsonFileRegistryStore(this.layout.registryDir);
    this.pulls = new PullService({
      modelsDir: opts.modelsDir,
      hubBaseUrl: opts.hubBaseUrl,
      allowedHosts: opts.allowedHosts,
      hubToken: opts.hubToken,
      catalog: this.catalog,
      registry: this.registry,
      fetch: opts.fetch,
    });
    this.blobs = new BlobStore(join(opts.modelsDir, '.blobs'));
    this.usage = opts.usage ?? NO_USAGE;
  }

  list(): Promise<ListedModel[]> {
    return listModels(this.catalog, this.registry, this.layout);
  }

  show(name: string): Promise<ShownModel> {
    return showModel(this, name);
  }

  /**
   * Starts (or joins) a pull. A model created or copied here has no hub origin: a pull of it succeeds at
   * once while its files are present, and is 404 otherwise.
   */
  async pull(name: string): Promise<PullStream> {
    const r = await resolveModel(name, this.catalog, this.registry);
    if (r.source === 'custom' && isCustomRepo(r.spec.repo)) {
      const local = await readLocalCopy(this.layout, r.spec.repo, r.spec.dtype);
      if (!local) throw modelNotFound(name);
      return {
        name: r.spec.name,
        done: Promise.resolve(),
        progress: async function* () {
          yield { status: 'success' };
        } as () => AsyncIterableIterator<PullProgress>,
      };
    }
    const h = await this.pulls.pull(name);
    return { name: h.name, progress: () => h.progress(), done: h.done };
  }

  /** Validates a create request (throws 400/404/409/503) and returns its progress stream. */
  async create(req: CreateRequest): Promise<AsyncGenerator<PullProgress>> {
    await this.#sweep();
    const plan = await prepareCreate(this, req);
    return runCreate(this, this.#locks, plan);
  }

  async copy(source: string, destination: string): Promise<CustomModelRecord> {
    await this.#sweep();
    return copyModel(this, this.#locks, source, destination);
  }

  /** Stores a trained classifier head as the custom model `name` (503 model_store_read_only on a read-only store). */
  async installClassifier(name: string, file: ClassifierFile): Promise<CustomModelRecord> {
    await this.#sweep();
    return installClassifier(this, this.#locks, name, file);
  }

  readClassifier(name: string): Promise<{ name: string; file: ClassifierFile }> {
    return readClassifier(this, name);
  }

  delete(name: string): Promise<{ name: string; removedFiles: boolean }> {
    return deleteModel(this, this.#locks, name);
  }

  close(): Promise<void> {
    return this.pulls.close();
  }

  /** Assembly folders of a process that died mid-create, removed once before the first create/copy. */
  #sweep(): Promise<void> {
    this.#swept ??= sweepAssemblyDirs(this.layout).catch(() => {});
    return this.#swept;
  }
}
