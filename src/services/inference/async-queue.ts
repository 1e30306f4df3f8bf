/** A one-consumer push queue exposed as an async iterator: the generation loop pushes, the caller pulls. */
export interface AsyncQueue<T> extends AsyncIterable<T> {
  push(value: T): void;
  end(): void;
  fail(error: unknown): void;
  /** Called once when the consumer stops early (break/return) or the queue ends/fails. */
  onClose(fn: () => void): void;
}

export function createAsyncQueue<T>(): AsyncQueue<T> {
  const items: T[] = [];
  let done = false;
  let error: { e: unknown } | undefined;
  let wake: (() => void) | undefined;
  const closers: (() => void)[] = [];
  const close = () => {
    for (const fn of closers.splice(0)) fn();
  };
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  return {
    push(v) {
      if (done || error) return;
      items.push(v);
      notify();
    },
    end() {
      if (done || error) return;
      done = true;
      notify();
      close();
    },
    fail(e) {
      if (done || error) return;
      error = { e };
      notify();
      close();
    },
    onClose(fn) {
      closers.push(fn);
    },
    async *[Symbol.asyncIterator]() {
      try {
        while (true) {
          if (error) throw error.e; // an abort wins over buffered text: the caller asked to stop now
          if (items.length) {
            yield items.shift() as T;
            continue;
          }
          if (done) return;
          await new Promise<void>((r) => (wake = r));
        }
      } finally {
        if (!done && !error) {
          done = true;
          close();
        }
      }
    },
  };
}
