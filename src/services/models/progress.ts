/**
 * Fan-out of pull progress to any number of subscribers, none of which can slow or stop the producer:
 * each subscriber has its own queue in which a progress update replaces the previous update for the same
 * digest, so a subscriber that stops reading costs at most one entry per file. A late subscriber first
 * receives the coalesced history (what a joined pull has done so far), then live updates.
 */

/** Ollama's pull progress object. */
export interface PullProgress {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
}

type Item = { ev: PullProgress } | { end: true } | { error: unknown };

class Subscriber {
  readonly queue: Item[] = [];
  wake?: () => void;
  closed = false;

  push(item: Item) {
    if (this.closed) return;
    const last = this.queue.at(-1);
    if ('ev' in item && last && 'ev' in last && sameStep(last.ev, item.ev)) this.queue[this.queue.length - 1] = item;
    else this.queue.push(item);
    this.wake?.();
  }
}

const sameStep = (a: PullProgress, b: PullProgress) => a.digest !== undefined && a.digest === b.digest && a.status === b.status;

export class ProgressChannel {
  readonly #history: PullProgress[] = [];
  readonly #subs = new Set<Subscriber>();
  #end?: Item;

  publish(ev: PullProgress): void {
    if (this.#end) return;
    const i = ev.digest === undefined ? -1 : this.#history.findIndex((h) => sameStep(h, ev));
    if (i >= 0) this.#history[i] = ev;
    else this.#history.push(ev);
    for (const s of this.#subs) s.push({ ev });
  }

  close(): void {
    this.#finish({ end: true });
  }

  fail(error: unknown): void {
    this.#finish({ error });
  }

  #finish(item: Item) {
    if (this.#end) return;
    this.#end = item;
    for (const s of this.#subs) s.push(item);
  }

  /** A fresh iterator; `return()` (a `break` in for-await) unsubscribes and leaves the producer running. */
  subscribe(): AsyncIterableIterator<PullProgress> {
    const sub = new Subscriber();
    for (const ev of this.#history) sub.push({ ev });
    if (this.#end) sub.push(this.#end);
    else this.#subs.add(sub);
    const done = (): IteratorResult<PullProgress> => {
      sub.closed = true;
      this.#subs.delete(sub);
      sub.wake?.();
      return { done: true, value: undefined };
    };
    const it: AsyncIterableIterator<PullProgress> = {
      next: async () => {
        while (!sub.closed) {
          const item = sub.queue.shift();
          if (!item) {
            await new Promise<void>((r) => (sub.wake = r));
            sub.wake = undefined;
            continue;
          }
          if ('ev' in item) return { done: false, value: item.ev };
          done();
          if ('error' in item) throw item.error;
          return { done: true, value: undefined };
        }
        return { done: true, value: undefined };
      },
      return: async () => done(),
      [Symbol.asyncIterator]: () => it,
    };
    return it;
  }
}
