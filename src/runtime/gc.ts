/**
 * A full garbage collection on request. Creating a session leaves hundreds of megabytes of garbage (on WASM
 * the model's bytes and their edited copies; natively the weights an edit converted), and a thread that then
 * sits idle keeps them until its next collection, which may not come for a long time. Bun has `Bun.gc`; Node and Deno expose V8's `gc` once the flag is set, which
 * setting it at run time does for contexts made afterwards.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined | null;

export function collectGarbage(): void {
  if (gc === undefined) {
    const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
    try {
      if (bun) gc = () => bun.gc(true);
      else {
        setFlagsFromString('--expose-gc');
        gc = runInNewContext('gc') as () => void;
      }
    } catch {
      gc = null; // not offered here: the next collection comes when it comes
    }
  }
  gc?.();
}
