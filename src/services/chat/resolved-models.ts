/**
 * Per-name memo of a resolved chat model (spec, engine spec, capabilities, template, parsed
 * generation_config and custom parameters), so a request does not re-read the manifest, config.json,
 * the chat template and generation_config.json from disk. Each lookup first asks for the model's stamp
 * (its spec and its manifest's fingerprint, one stat): a model pulled, created, copied over or deleted
 * since has another stamp and is resolved afresh. The stamp is taken before resolving, so a change that
 * races a resolution is seen by the next lookup. Entries are shared: callers treat them as read-only.
 */
import type { ModelKind } from '../models/spec.ts';

const MAX_ENTRIES = 256;

export class ResolvedModelMemo<T> {
  readonly #entries = new Map<string, { stamp: string; value: T }>();

  constructor(
    private readonly stampOf: (name: string) => Promise<string | undefined>,
    private readonly resolve: (name: string, kind: ModelKind) => Promise<T>,
  ) {}

  async get(name: string, kind: ModelKind): Promise<T> {
    const key = `${kind}\u0000${name}`;
    let stamp: string | undefined;
    try {
      stamp = await this.stampOf(name);
    } catch {
      stamp = undefined; // no stamp, no memo: the resolution below answers (and throws) as it always did
    }
    const hit = this.#entries.get(key);
    if (stamp !== undefined && hit?.stamp === stamp) return hit.value;
    this.#entries.delete(key);
    const value = await this.resolve(name, kind);
    if (stamp !== undefined) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { stamp, value });
    }
    return value;
  }
}
