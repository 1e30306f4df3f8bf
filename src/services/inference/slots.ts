/**
 * Inference slots: at most `limit` concurrent generations on one model. When all are busy, `Queue` waits
 * in arrival order and `Reject` sheds load with 503 + Retry-After: 1 (docs/errors.md).
 */
import { ServiceError } from '../errors.ts';

export type SaturationPolicy = 'Queue' | 'Reject';

export interface Slots {
  /** Resolves with a release function (idempotent). Rejects with the signal's reason if aborted while queued. */
  acquire(signal?: AbortSignal): Promise<() => void>;
  readonly busy: number;
  readonly waiting: number;
  readonly limit: number;
}

export function createSlots(limit: number, policy: SaturationPolicy = 'Queue'): Slots {
  let busy = 0;
  const waiters: { grant: () => void }[] = [];
  const releaser = () => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = waiters.shift();
      if (next) next.grant(); // hand the slot over directly: busy stays the same
      else busy--;
    };
  };
  return {
    get busy() {
      return busy;
    },
    get waiting() {
      return waiters.length;
    },
    limit,
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (busy < limit) {
        busy++;
        return Promise.resolve(releaser());
      }
      if (policy === 'Reject') {
        return Promise.reject(
          new ServiceError(503, 'service_unavailable', `every inference slot of this model is busy (${limit}); retry shortly`, {
            headers: { 'Retry-After': '1' },
          }),
        );
      }
      return new Promise((resolve, reject) => {
        const w = {
          grant: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve(releaser());
          },
        };
        const onAbort = () => {
          const i = waiters.indexOf(w);
          if (i >= 0) waiters.splice(i, 1);
          reject(signal!.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        waiters.push(w);
      });
    },
  };
}
