/**
 * Job results too large for the shared record, held in this node's memory until the record expires.
 * Bounded by total bytes: when a new result would pass the cap, the least recently stored or read ones are
 * dropped first (a poll for a dropped result answers 404, as an expired job does).
 */
export const NODE_RESULTS_MAX_BYTES = 512 * 1024 * 1024;

export class NodeResults {
  /** Insertion order is recency order: a read moves the entry to the end. */
  readonly #held = new Map<string, { json: string; bytes: number }>();
  #bytes = 0;

  constructor(readonly maxBytes = NODE_RESULTS_MAX_BYTES) {}

  /** Holds a result; false (and nothing held) when it alone is larger than the cap. */
  put(id: string, json: string): boolean {
    this.delete(id);
    const bytes = new TextEncoder().encode(json).byteLength;
    if (bytes > this.maxBytes) return false;
    for (const [old, v] of this.#held) {
      if (this.#bytes + bytes <= this.maxBytes) break;
      this.#held.delete(old);
      this.#bytes -= v.bytes;
    }
    this.#held.set(id, { json, bytes });
    this.#bytes += bytes;
    return true;
  }

  get(id: string): string | undefined {
    const v = this.#held.get(id);
    if (!v) return undefined;
    this.#held.delete(id);
    this.#held.set(id, v);
    return v.json;
  }

  delete(id: string): boolean {
    const v = this.#held.get(id);
    if (!v) return false;
    this.#held.delete(id);
    this.#bytes -= v.bytes;
    return true;
  }

  ids(): string[] {
    return [...this.#held.keys()];
  }

  get bytes(): number {
    return this.#bytes;
  }
}
