/**
 * Rate limit of failed console sign-ins: after `max` failures within `windowMs` from one client (or against
 * one key's second factor), further attempts are refused with 429 until the oldest failure ages out.
 * Kept in memory per node: a restart forgets it, which is acceptable for a brute-force brake.
 */
import { ServiceError } from '../errors.ts';

export class SignInLimiter {
  #failures = new Map<string, number[]>();

  constructor(private max = 5, private windowMs = 15 * 60_000) {}

  #recent(bucket: string, now: number): number[] {
    const list = (this.#failures.get(bucket) ?? []).filter((t) => now - t < this.windowMs);
    if (list.length) this.#failures.set(bucket, list);
    else this.#failures.delete(bucket);
    return list;
  }

  /** Throws 429 when any of the buckets is exhausted. */
  check(...buckets: string[]): void {
    const now = Date.now();
    for (const b of buckets) {
      const list = this.#recent(b, now);
      if (list.length >= this.max) {
        const retry = Math.max(1, Math.ceil((list[0] + this.windowMs - now) / 1000));
        throw new ServiceError(429, 'too_many_sign_in_attempts', `too many failed sign-ins; try again in ${retry} s`, {
          headers: { 'Retry-After': String(retry) },
        });
      }
    }
  }

  fail(...buckets: string[]): void {
    const now = Date.now();
    if (this.#failures.size > 10_000) this.#failures.clear(); // a flood of addresses must not grow memory without bound
    for (const b of buckets) this.#failures.set(b, [...this.#recent(b, now), now]);
  }

  succeed(bucket: string): void {
    this.#failures.delete(bucket);
  }
}
