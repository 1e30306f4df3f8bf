/**
 * Stop sequences over streamed text: emits text exactly up to (not including) the first stop string and
 * holds back any tail that could still become one, so nothing past a stop ever reaches the client.
 */
export interface StopMatcher {
  /** Feed new text; returns what may be emitted now, and whether a stop string was hit. */
  push(chunk: string): { emit: string; stopped: boolean };
  /** End of generation: the held-back tail (no stop can complete any more). */
  flush(): string;
  /** All text emitted so far. */
  readonly text: string;
  /** The stop string that ended the text, once one did. */
  readonly matched: string | undefined;
}

export function createStopMatcher(stops: readonly string[] = []): StopMatcher {
  const list = stops.filter((s) => s.length > 0);
  const longest = Math.max(0, ...list.map((s) => s.length));
  let all = '';
  let sent = 0;
  let stopped = false;
  let matched: string | undefined;
  const take = (end: number) => {
    const out = all.slice(sent, end);
    sent = end;
    return out;
  };
  return {
    push(chunk) {
      if (stopped) return { emit: '', stopped };
      all += chunk;
      const from = Math.max(0, sent - longest + 1);
      let hit = -1;
      for (const s of list) {
        const i = all.indexOf(s, from);
        if (i >= 0 && (hit < 0 || i < hit)) (hit = i), (matched = s);
      }
      if (hit >= 0) {
        stopped = true;
        const emit = take(hit);
        all = all.slice(0, hit);
        return { emit, stopped };
      }
      let hold = 0;
      for (const s of list) {
        for (let k = Math.min(s.length - 1, all.length - sent); k > hold; k--) {
          if (all.endsWith(s.slice(0, k))) {
            hold = k;
            break;
          }
        }
      }
      return { emit: take(all.length - hold), stopped };
    },
    flush() {
      return take(all.length);
    },
    get text() {
      return all.slice(0, sent);
    },
    get matched() {
      return matched;
    },
  };
}
