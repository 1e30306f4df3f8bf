/**
 * Model residency: load on first use (one load per model even under concurrent requests), per-model
 * inference slots, keep_alive expiry, LRU eviction of idle models under the max-models / memory-budget
 * policy, and release of idle device memory.
 */
import { ServiceError } from '../errors.ts';
import { type LoadedModel, loadModel, type LoadOptions, type Task } from './load.ts';
import { availableDtypes, type Dtype, modelSizeBytes } from './model-files.ts';
import { createSlots, type SaturationPolicy, type Slots } from './slots.ts';

export interface ResidencySettings {
  maxLoadedModels: number;
  /** 0 = no budget. */
  memoryBudgetBytes: number;
  slotsPerModel: number;
  saturationPolicy: SaturationPolicy;
  /** Default keep_alive in seconds (negative = forever). */
  keepAliveSeconds: number;
  /** Idle time after which a model's device memory is released; 0 = never. */
  idleDeviceMemoryReleaseSeconds: number;
}

export interface ModelSpec {
  /** Name the model is listed under (catalog or custom name). */
  name: string;
  dir: string;
  task: Task;
  dtype?: Dtype;
}

export interface ResidentInfo {
  name: string;
  dir: string;
  task: Task;
  dtype: Dtype;
  device: string;
  ort: string;
  sizeBytes: number;
  loadedAt: Date;
  lastUsedAt: Date;
  /** null = kept until evicted (keep_alive negative). */
  expiresAt: Date | null;
  active: number;
  queued: number;
  notes: string[];
}

export interface Lease {
  model: LoadedModel;
  /** Load time in ns when this request loaded the model, else 0. */
  loadNs: number;
  /** Frees the slot and starts the keep_alive clock (idempotent). */
  release(): void;
}

export interface DeviceReleaseReport {
  released: { name: string; device: string; bytes: number }[];
  bytes: number;
  note: string;
}

interface Entry {
  spec: ModelSpec;
  model: LoadedModel;
  slots: Slots;
  loadedAt: number;
  lastUsed: number;
  /** Monotonic use counter: LRU order even within one millisecond. */
  useSeq: number;
  keepAliveMs: number;
  expiresAt: number;
  active: number;
  expiryTimer?: ReturnType<typeof setTimeout>;
  deviceTimer?: ReturnType<typeof setTimeout>;
}

export type Loader = (spec: ModelSpec) => Promise<LoadedModel>;

const GPU_DEVICES = new Set(['webgpu', 'cuda']);
const unref = (t: ReturnType<typeof setTimeout>) => ((t as { unref?: () => void }).unref?.(), t);

export function createResidency(settings: ResidencySettings, load: Loader = defaultLoader()) {
  const entries = new Map<string, Entry>();
  let seq = 0;
  const loading = new Map<string, Promise<{ entry: Entry; loadNs: number }>>();

  const isIdle = (e: Entry) => e.active === 0 && e.slots.waiting === 0;

  async function unloadEntry(e: Entry) {
    if (entries.get(e.spec.name) !== e) return;
    entries.delete(e.spec.name);
    clearTimeout(e.expiryTimer);
    clearTimeout(e.deviceTimer);
    await e.model.dispose();
  }

  /** Evict least recently used idle models until `incoming` more bytes and one more model fit. */
  async function makeRoom(incomingBytes: number) {
    const over = () => {
      const all = [...entries.values()];
      const bytes = all.reduce((n, e) => n + e.model.sizeBytes, 0);
      // in-flight loads (this one included) count against the limit too
      return all.length + loading.size > settings.maxLoadedModels ||
        (settings.memoryBudgetBytes > 0 && bytes + incomingBytes > settings.memoryBudgetBytes);
    };
    while (over()) {
      const victim = [...entries.values()].filter(isIdle).sort((a, b) => a.useSeq - b.useSeq)[0];
      if (!victim) {
        if (entries.size === 0) return; // a single model larger than the budget still gets its chance
        throw new ServiceError(503, 'service_unavailable', 'memory pressure: every resident model is busy; retry shortly', {
          headers: { 'Retry-After': '5' },
        });
      }
      await unloadEntry(victim);
    }
  }

  function ensure(spec: ModelSpec): Promise<{ entry: Entry; loadNs: number }> {
    const have = entries.get(spec.name);
    if (have) return Promise.resolve({ entry: have, loadNs: 0 });
    let p = loading.get(spec.name);
    if (!p) {
      p = (async () => {
        const dtype = spec.dtype ?? (await availableDtypes(spec.dir))[0];
        await makeRoom(dtype ? await modelSizeBytes(spec.dir, dtype) : 0);
        const model = await load(spec);
        const t = Date.now();
        const entry: Entry = {
          spec,
          model,
          slots: createSlots(settings.slotsPerModel, settings.saturationPolicy),
          loadedAt: t,
          lastUsed: t,
          useSeq: ++seq,
          keepAliveMs: keepAliveDefault(),
          expiresAt: t + keepAliveDefault(),
          active: 0,
        };
        entries.set(spec.name, entry);
        schedule(entry);
        return { entry, loadNs: model.loadNs };
      })().finally(() => loading.delete(spec.name));
      loading.set(spec.name, p);
    }
    return p;
  }

  const keepAliveDefault = () => (settings.keepAliveSeconds < 0 ? Infinity : settings.keepAliveSeconds * 1000);

  /** (Re)arm the expiry and device-release timers of an idle entry. */
  function schedule(e: Entry) {
    clearTimeout(e.expiryTimer);
    clearTimeout(e.deviceTimer);
    if (!isIdle(e)) return;
    if (e.keepAliveMs === 0) {
      void unloadEntry(e);
      return;
    }
    if (Number.isFinite(e.keepAliveMs)) e.expiryTimer = unref(setTimeout(() => isIdle(e) && void unloadEntry(e), e.keepAliveMs));
    const idleS = settings.idleDeviceMemoryReleaseSeconds;
    if (idleS > 0 && GPU_DEVICES.has(e.model.device)) {
      e.deviceTimer = unref(setTimeout(() => isIdle(e) && void unloadEntry(e), idleS * 1000));
    }
  }

  function touch(e: Entry, keepAliveMs: number | undefined) {
    e.lastUsed = Date.now();
    e.useSeq = ++seq;
    if (keepAliveMs !== undefined) e.keepAliveMs = keepAliveMs;
    e.expiresAt = e.lastUsed + e.keepAliveMs;
  }

  return {
    /** Load if needed, then take an inference slot. `keepAliveMs` applies from the release on. */
    async acquire(spec: ModelSpec, o: { keepAliveMs?: number; signal?: AbortSignal } = {}): Promise<Lease> {
      let { entry, loadNs } = await ensure(spec);
      while (entries.get(spec.name) !== entry) ({ entry, loadNs } = await ensure(spec)); // evicted meanwhile
      clearTimeout(entry.expiryTimer);
      const free = await entry.slots.acquire(o.signal);
      entry.active++;
      touch(entry, o.keepAliveMs);
      let done = false;
      return {
        model: entry.model,
        loadNs,
        release() {
          if (done) return;
          done = true;
          free();
          entry.active--;
          touch(entry, undefined);
          schedule(entry);
        },
      };
    },

    /** Empty chat/generate: load (or, with keep_alive 0, unload) without generating. */
    async preload(spec: ModelSpec, keepAliveMs?: number): Promise<{ loaded: boolean; loadNs: number }> {
      if (keepAliveMs === 0) {
        await this.unload(spec.name);
        return { loaded: false, loadNs: 0 };
      }
      const { entry, loadNs } = await ensure(spec);
      touch(entry, keepAliveMs);
      schedule(entry);
      return { loaded: true, loadNs };
    },

    /** Unload now if idle; if serving, as soon as the last request ends. */
    async unload(name: string): Promise<boolean> {
      await loading.get(name)?.catch(() => undefined);
      const e = entries.get(name);
      if (!e) return false;
      e.keepAliveMs = 0;
      if (isIdle(e)) await unloadEntry(e);
      return true;
    },

    isLoaded: (name: string) => entries.has(name),

    list(): ResidentInfo[] {
      return [...entries.values()]
        .sort((a, b) => b.useSeq - a.useSeq)
        .map((e) => ({
          name: e.spec.name,
          dir: e.model.dir,
          task: e.model.task,
          dtype: e.model.dtype,
          device: e.model.device,
          ort: e.model.ort,
          sizeBytes: e.model.sizeBytes,
          loadedAt: new Date(e.loadedAt),
          lastUsedAt: new Date(e.lastUsed),
          expiresAt: Number.isFinite(e.expiresAt) ? new Date(e.expiresAt) : null,
          active: e.active,
          queued: e.slots.waiting,
          notes: e.model.notes,
        }));
    },

    /**
     * Give idle models' device memory back. GPU sessions are disposed (they reload on next use); CPU and
     * WASM sessions hold no device memory, so nothing is released there and the report says so.
     */
    async releaseDeviceMemory(): Promise<DeviceReleaseReport> {
      const released: DeviceReleaseReport['released'] = [];
      for (const e of [...entries.values()]) {
        if (GPU_DEVICES.has(e.model.device) && isIdle(e)) {
          released.push({ name: e.spec.name, device: e.model.device, bytes: e.model.sizeBytes });
          await unloadEntry(e);
        }
      }
      const bytes = released.reduce((n, r) => n + r.bytes, 0);
      const note = released.length
        ? `released ${released.length} idle GPU model(s)`
        : 'no idle GPU sessions; CPU/WASM sessions hold no device memory';
      return { released, bytes, note };
    },

    async close(): Promise<void> {
      for (const e of [...entries.values()]) await unloadEntry(e);
    },
  };
}

export type Residency = ReturnType<typeof createResidency>;

export function defaultLoader(opts: Omit<LoadOptions, 'dtype'> = {}): Loader {
  return (spec) => loadModel(spec.dir, spec.task, { ...opts, dtype: spec.dtype });
}
