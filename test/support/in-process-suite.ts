/** The app in-process for one describe block (or file): made before its tests, closed after them. */
import { after, before } from 'node:test';
import type { AppOptions } from '../../src/app.ts';
import type { Config } from '../../src/config.ts';
import { type InProcess, inProcess } from './server.ts';

/** Registers the before/after hooks of the enclosing suite; `ready` gets the app once it is made. */
export function inProcessSuite(ready: (t: InProcess) => void, overrides: Partial<Config> = {}, opts?: AppOptions): void {
  let t: InProcess | undefined;
  before(async () => {
    t = await inProcess(overrides, opts);
    ready(t);
  });
  after(() => t?.close());
}
