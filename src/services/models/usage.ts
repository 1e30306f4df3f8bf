/**
 * What model management needs to know from the inference engine: whether a model is loaded or serving
 * requests right now, and how to unload it. A small interface, so the models service does not depend on
 * the engine; `residencyUsage` adapts the engine's residency.
 */

export interface ModelUsage {
  /** True while a request holds or waits for one of the model's inference slots. */
  isServing(name: string): boolean;
  isLoaded(name: string): boolean;
  /** Unloads the model if it is loaded (idle). */
  unload(name: string): Promise<void>;
}

/** Nothing is ever loaded (no engine wired). */
export const NO_USAGE: ModelUsage = { isServing: () => false, isLoaded: () => false, unload: async () => {} };

/** The part of the engine's residency (`src/services/inference/residency.ts`) this adapter reads. */
export interface ResidencyLike {
  list(): { name: string; active: number; queued: number }[];
  unload(name: string): Promise<boolean>;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

export function residencyUsage(residency: ResidencyLike): ModelUsage {
  return {
    isServing: (name) => residency.list().some((e) => same(e.name, name) && e.active + e.queued > 0),
    isLoaded: (name) => residency.list().some((e) => same(e.name, name)),
    unload: async (name) => {
      for (const e of residency.list()) if (same(e.name, name)) await residency.unload(e.name);
    },
  };
}
