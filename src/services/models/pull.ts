/**
 * Pulls a model: resolves the name, fetches the hub's file list, downloads what is missing (resumable,
 * verified), installs it so that nothing half-written is visible, writes the manifest last, and records
 * hub imports as custom models. One download per model variant at a time: a second pull joins the one
 * in flight and shares its progress. The work is detached from its callers: a subscriber that stops
 * reading (a client that disconnects) does not stop it.
 */
import { createHash } from 'node:crypto';
import { copyFile, link, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isServiceError, ServiceError } from '../errors.ts';
import { BlobPool } from './blob-pool.ts';
import { Catalog } from './catalog.ts';
import { declaredSize, type DownloadedFile, downloadFile, sha256File } from './download.ts';
import { EgressPolicy } from './egress.ts';
import { detectComponents, pickDefaultDtype, selectFiles } from './files.ts';
import { HubClient, type HubModelInfo, type HubSibling } from './hub.ts';
import { ModelStoreLayout, readOnlyError } from './layout.ts';
import { type LocalCopy, type ManifestFile, manifestStamp, readLocalCopy, writeManifest } from './manifest.ts';
import { inferProfile } from './profile.ts';
import { ProgressChannel, type PullProgress } from './progress.ts';
import { JsonFileRegistryStore, type ModelRegistryStore } from './registry-store.ts';
import { modelNotFound, resolveModel } from './resolve.ts';
import type { CustomModelRecord, Dtype, ModelSpec } from './spec.ts';
import { randomId } from '../../ids.ts';

export interface PullServiceOptions {
  modelsDir: string;
  /** Default `https://huggingface.co`; tests and mirrors point it elsewhere. */
  hubBaseUrl?: string;
  /** Hub hosts allowed by the egress policy; default `huggingface.co`, `hf.co` (subdomains included). */
  allowedHosts?: readonly string[];
  hubToken?: string;
  catalog?: Catalog;
  /** Default: JSON files under `<modelsDir>/.registry/`. */
  registry?: ModelRegistryStore;
  fetch?: typeof fetch;
  /** Retries per file after a transient failure, each resuming with a Range request. Default 3. */
  retries?: number;
  retryDelayMs?: number;
  /** A file transfer silent for this long is treated as interrupted and resumed. Default 60 s. */
  idleTimeoutMs?: number;
}

export interface PulledModel {
  spec: ModelSpec;
  local: LocalCopy;
  unverified: boolean;
}

export interface PullHandle {
  /** The model's display name (`qwen3:0.6b`, `hf.co/owner/repo:q4`). */
  name: string;
  /** True when this pull joined a download already in flight. */
  joined: boolean;
  /** A fresh subscription to the progress, ending with `{status:'success'}` or throwing the failure. */
  progress(): AsyncIterableIterator<PullProgress>;
  /** Settles when the pull finishes, whether anyone reads the progress or not. */
  done: Promise<PulledModel>;
}

interface Target {
  repo: string;
  revision?: string;
  dtype?: Dtype;
  components?: string[];
}

interface JobResult {
  dtype: Dtype;
  components: string[];
  info: HubModelInfo;
  local: LocalCopy;
}

interface Job {
  channel: ProgressChannel;
  controller: AbortController;
  result: Promise<JobResult>;
}

export class PullService {
  readonly catalog: Catalog;
  readonly registry: ModelRegistryStore;
  readonly layout: ModelStoreLayout;
  readonly hub: HubClient;
  readonly #pool: BlobPool;
  readonly #jobs = new Map<string, Job>();
  readonly #retries: number;
  readonly #retryDelayMs: number;
  readonly #idleTimeoutMs?: number;
  #swept = false;

  constructor(opts: PullServiceOptions) {
    this.layout = new ModelStoreLayout(opts.modelsDir);
    this.catalog = opts.catalog ?? new Catalog();
    this.registry = opts.registry ?? new JsonFileRegistryStore(this.layout.registryDir);
    this.hub = new HubClient({
      baseUrl: opts.hubBaseUrl,
      policy: new EgressPolicy(opts.allowedHosts),
      fetch: opts.fetch,
      token: opts.hubToken,
    });
    this.#pool = new BlobPool(this.layout);
    this.#retries = opts.retries ?? 3;
    this.#retryDelayMs = opts.retryDelayMs ?? 500;
    this.#idleTimeoutMs = opts.idleTimeoutMs;
  }

  /**
   * Starts (or joins) a pull. Throws before any download for: unknown name (404), a hub host outside the
   * egress policy (400), a read-only model directory (503 model_store_read_only). Later failures arrive
   * through `done` and `progress()`.
   */
  async pull(name: string): Promise<PullHandle> {
    const resolved = await resolveModel(name, this.catalog, this.registry);
    let target: Target;
    let displayName: string;
    let importAs: { host: string } | undefined;
    if (resolved.source === 'hub') {
      this.hub.policy.assertReferenceHost(resolved.ref.host);
      target = { repo: `${resolved.ref.owner}/${resolved.ref.repo}`, dtype: resolved.dtype };
      displayName = resolved.name;
      importAs = { host: resolved.ref.host };
    } else {
      const spec = resolved.spec;
      if (resolved.source === 'custom' && resolved.spec.hub_host) this.hub.policy.assertReferenceHost(resolved.spec.hub_host);
      target = { repo: spec.repo, revision: spec.revision, dtype: spec.dtype, components: spec.components };
      displayName = spec.name;
    }
    await this.layout.assertWritable();
    if (!this.#swept) {
      // Staging folders of a previous process that died mid-install; blobs and partials stay for resume.
      this.#swept = true;
      await this.layout.sweepStages();
    }

    const key = `${target.repo.toLowerCase()}@${target.revision ?? 'main'}#${target.dtype ?? 'auto'}`;
    let job = this.#jobs.get(key);
    const joined = !!job;
    if (!job) {
      job = this.#start(target);
      this.#jobs.set(key, job);
      const forget = () => {
        if (this.#jobs.get(key) === job) this.#jobs.delete(key);
      };
      job.result.then(forget, forget);
    }

    const shared = job;
    const done = shared.result
      .then(async (res): Promise<PulledModel> => {
        if (resolved.source !== 'hub') return { spec: resolved.spec, local: res.local, unverified: resolved.source === 'custom' };
        const record = await this.#recordImport(displayName, importAs!.host, target.repo, res);
        return { spec: record, local: res.local, unverified: true };
      })
      .catch((err) => {
        throw readOnlyError(err) ?? err;
      });
    done.catch(() => {}); // settled by whoever awaits it; never an unhandled rejection

    return {
      name: displayName,
      joined,
      done,
      progress: () => progressOf(shared.channel, done),
    };
  }

  /** The local copy of a model, downloading it first when absent (download on demand; joins a pull in flight). */
  async ensure(name: string): Promise<PulledModel> {
    const resolved = await resolveModel(name, this.catalog, this.registry);
    if (resolved.source !== 'hub') {
      const local = await readLocalCopy(this.layout, resolved.spec.repo, resolved.spec.dtype);
      if (local) return { spec: resolved.spec, local, unverified: resolved.source === 'custom' };
    }
    return (await this.pull(name)).done;
  }

  /**
   * What a cache of a local model's derived data keys on: the name's spec (a custom model's record, so a
   * re-created or edited model differs) and its manifest's stamp (changes on every pull, create and
   * delete). Undefined when the name is not a local model yet (nothing to cache). Reads no model file.
   */
  async localStamp(name: string): Promise<string | undefined> {
    const r = await resolveModel(name, this.catalog, this.registry);
    if (r.source === 'hub') return undefined;
    const manifest = await manifestStamp(this.layout, r.spec.repo, r.spec.dtype);
    return manifest && `${manifest}|${JSON.stringify(r.spec)}`;
  }

  /** Catalog entry or custom model; 404 for anything else (hub references must be pulled first). */
  async resolve(name: string): Promise<{ spec: ModelSpec; unverified: boolean }> {
    const r = await resolveModel(name, this.catalog, this.registry);
    if (r.source === 'hub') throw modelNotFound(name);
    return { spec: r.spec, unverified: r.source === 'custom' };
  }

  /** Models with a download in flight, as `owner/repo@rev#dtype` keys. */
  inFlight(): string[] {
    return [...this.#jobs.keys()];
  }

  /** Aborts downloads in flight (server shutdown); partial files stay for the next start to resume. */
  async close(): Promise<void> {
    const jobs = [...this.#jobs.values()];
    for (const j of jobs) {
      j.controller.abort(new ServiceError(503, 'service_unavailable', 'the server is shutting down', { headers: { 'Retry-After': '5' } }));
    }
    await Promise.allSettled(jobs.map((j) => j.result));
  }

  #start(target: Target): Job {
    const job: Job = { channel: new ProgressChannel(), controller: new AbortController(), result: undefined! };
    job.result = this.#run(job, target).then(
      (res) => {
        job.channel.close();
        return res;
      },
      (err) => {
        const e = readOnlyError(err) ?? err;
        job.channel.fail(e);
        throw e;
      },
    );
    job.result.catch(() => {});
    return job;
  }

  async #run(job: Job, target: Target): Promise<JobResult> {
    const { channel } = job;
    const signal = job.controller.signal;
    const { repo } = target;
    channel.publish({ status: 'pulling manifest' });
    const info = await this.hub.modelInfo(repo, target.revision, signal);
    const names = info.siblings.map((s) => s.rfilename);
    const components = target.components ?? detectComponents(names);
    const dtype = target.dtype ?? pickDefaultDtype(names, components);
    if (!dtype) throw new ServiceError(404, 'not_found', `model repository '${repo}' has no ONNX weights under onnx/`);
    const files = selectFiles(info.siblings, { repo, dtype, components });
    const revision = info.sha ?? target.revision ?? 'main';

    // Files an earlier pull of this variant installed and the hub has not changed are kept as they are.
    const previous = await readLocalCopy(this.layout, repo, dtype);
    const entries = new Map<string, ManifestFile>();
    for (const f of files) {
      const prev = previous?.manifest.files.find((p) => p.path === f.rfilename);
      if (prev && unchanged(prev, f)) entries.set(f.rfilename, prev);
    }
    const needed = files.filter((f) => !entries.has(f.rfilename)).map((f) => ({ file: f, key: blobKey(repo, revision, f) }));
    for (const n of needed) this.#pool.acquire(n.key);

    let outcome: 'consumed' | 'keep' | 'discard' = 'keep';
    try {
      for (const f of files) {
        const label = digestLabel(repo, revision, f);
        const step = { status: `pulling ${label.split(':')[1].slice(0, 12)}`, digest: label };
        const total = declaredSize(f);
        const n = needed.find((x) => x.file === f);
        if (!n) {
          channel.publish({ ...step, total, completed: total });
          continue;
        }
        const got = await this.#pool.get(
          n.key,
          () => this.#fetchBlob(repo, revision, f, n.key, signal, (completed) => channel.publish({ ...step, total, completed })),
        );
        channel.publish({ ...step, total: got.size, completed: got.size });
        entries.set(f.rfilename, {
          path: f.rfilename,
          size: got.size,
          sha256: got.sha256,
          ...(f.lfs ? {} : f.blobId ? { blob_id: f.blobId } : {}),
        });
      }
      channel.publish({ status: 'verifying sha256 digest' });
      await this.#install(repo, needed);
      channel.publish({ status: 'writing manifest' });
      await writeManifest(this.layout, {
        schema: 1,
        repo,
        revision,
        dtype,
        files: files.map((f) => entries.get(f.rfilename)!),
        pulled_at: new Date().toISOString(),
      });
      outcome = 'consumed';
    } catch (err) {
      // Bytes that failed verification are deleted with the rest of this pull; transient failures keep them for resume.
      if (isServiceError(err) && err.reason === 'digest_mismatch') outcome = 'discard';
      throw err;
    } finally {
      for (const n of needed) await this.#pool.release(n.key, outcome).catch(() => {});
    }
    const local = await readLocalCopy(this.layout, repo, dtype);
    if (!local) throw new ServiceError(500, 'internal_error', `model '${repo}' is incomplete after installing it`);
    return { dtype, components, info, local };
  }

  /** One file into `.partial/blobs/<key>`: reuse a verified blob, else download with retries (each resumes). */
  async #fetchBlob(
    repo: string,
    revision: string,
    f: HubSibling,
    key: string,
    signal: AbortSignal,
    onProgress: (completed: number) => void,
  ): Promise<DownloadedFile> {
    const done = this.layout.blobDone(key);
    const existing = await stat(done).catch(() => undefined);
    if (existing) return { size: existing.size, sha256: f.lfs?.sha256.toLowerCase() ?? (await sha256File(done)) };
    const partialPath = this.layout.blobPartial(key);
    const url = this.hub.fileUrl(repo, revision, f.rfilename);
    for (let attempt = 0;; attempt++) {
      try {
        const got = await downloadFile({
          hub: this.hub,
          url,
          file: f,
          partialPath,
          signal,
          onProgress,
          idleTimeoutMs: this.#idleTimeoutMs,
        });
        await rename(partialPath, done);
        return got;
      } catch (err) {
        const transient = isServiceError(err) && err.reason === 'hub_unavailable';
        if (!transient || attempt >= this.#retries || signal.aborted) throw err;
        await sleep(this.#retryDelayMs * 2 ** attempt, signal);
      }
    }
  }

  /**
   * Moves verified blobs into `<modelsDir>/<owner>/<repo>/`. A new model directory is assembled aside and
   * renamed into place whole; into an existing one (another dtype) each file lands by an atomic rename.
   */
  async #install(repo: string, needed: { file: HubSibling; key: string }[]): Promise<void> {
    if (!needed.length) return;
    const dir = this.layout.modelDir(repo);
    if (!(await stat(dir).catch(() => undefined))) {
      const stage = this.layout.newStageDir();
      try {
        for (const n of needed) await linkOrCopy(this.layout.blobDone(n.key), join(stage, n.file.rfilename));
        await mkdir(dirname(dir), { recursive: true });
        try {
          await rename(stage, dir);
          return;
        } catch (err) {
          // Another pull of the same repository created it meanwhile: fall through to per-file install.
          if (!['EEXIST', 'ENOTEMPTY'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
        }
      } finally {
        await rm(stage, { recursive: true, force: true });
      }
    }
    for (const n of needed) {
      const target = join(dir, n.file.rfilename);
      const tmp = `${target}.svc-${randomId(8)}.tmp`;
      await linkOrCopy(this.layout.blobDone(n.key), tmp);
      await rename(tmp, target);
    }
  }

  async #recordImport(name: string, host: string, repo: string, res: JobResult): Promise<CustomModelRecord> {
    const existing = await this.registry.get(name);
    const profile = await inferProfile(res.local.dir, res.info.pipeline_tag);
    const record: CustomModelRecord = {
      name,
      repo,
      dtype: res.dtype,
      kind: profile.kind,
      capabilities: profile.capabilities,
      components: res.components,
      details: { family: profile.family, quantization_level: res.dtype.toUpperCase() },
      source: 'hub',
      unverified: true,
      hub_host: host,
      created_at: existing?.created_at ?? new Date().toISOString(),
    };
    await this.registry.put(record);
    return record;
  }
}

async function* progressOf(channel: ProgressChannel, done: Promise<PulledModel>): AsyncGenerator<PullProgress> {
  yield* channel.subscribe();
  await done;
  yield { status: 'success' };
}

function unchanged(prev: ManifestFile, f: HubSibling): boolean {
  if (prev.size !== declaredSize(f)) return false;
  if (f.lfs) return prev.sha256 === f.lfs.sha256.toLowerCase();
  return !!f.blobId && prev.blob_id === f.blobId;
}

/** Name of the partial/verified blob: the content digest the hub declares, so a resume never mixes revisions. */
function blobKey(repo: string, revision: string, f: HubSibling): string {
  if (f.lfs) return f.lfs.sha256.toLowerCase();
  if (f.blobId) return `git-${f.blobId.toLowerCase()}`;
  return `url-${createHash('sha256').update(`${repo}@${revision}/${f.rfilename}`).digest('hex')}`;
}

/** The `digest` of a progress object: the LFS sha256, else the git blob id (a sha1) of small files. */
function digestLabel(repo: string, revision: string, f: HubSibling): string {
  if (f.lfs) return `sha256:${f.lfs.sha256.toLowerCase()}`;
  if (f.blobId) return `sha1:${f.blobId.toLowerCase()}`;
  return `sha256:${createHash('sha256').update(`${repo}@${revision}/${f.rfilename}`).digest('hex')}`;
}

async function linkOrCopy(src: string, dst: string): Promise<void> {
  await mkdir(dirname(dst), { recursive: true });
  try {
    await link(src, dst); // same filesystem: no second copy of a large file
  } catch {
    await copyFile(src, dst);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
