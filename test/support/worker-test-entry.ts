/** A pool worker with test operations only: block, trap, grow, run out of memory, fail, keep state. */
import { ServiceError } from '../../src/services/errors.ts';
import { serveOperations } from '../../src/services/workers/serve-operations.ts';
import { threadNice } from './thread-nice.ts';

let calls = 0;
const kept: Uint8Array[] = [];
// (module (func (export "f") unreachable)): a real WebAssembly trap
const TRAP = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 5, 1, 3, 0, 0, 11]);

await serveOperations({
  'test.echo': (a: unknown) => a,
  'test.calls': () => ++calls,
  /** Blocks the worker's thread, as synchronous WASM does. */
  'test.block': (a: { ms: number }) => {
    const end = performance.now() + a.ms;
    while (performance.now() < end) { /* busy */ }
    return ++calls;
  },
  'test.trap': () => (new WebAssembly.Instance(new WebAssembly.Module(TRAP)).exports.f as () => void)(),
  'test.grow': (a: { mb: number }) => {
    const b = new Uint8Array(a.mb * 1024 * 1024).fill(1);
    kept.push(b);
    return b.length;
  },
  'test.oom': () => {
    const hog: unknown[] = [];
    for (;;) hog.push(new Array(100_000).fill({ x: Math.random() }));
  },
  'test.fail': () => {
    throw new ServiceError(422, 'pdf_corrupt', 'the document is damaged', { details: [{ field: 'file' }] });
  },
  /** The calling thread's nice value, read back from the kernel (Linux). */
  'test.nice': () => threadNice(),
  'test.bytes': (a: { n: number }) => ({ data: new Uint8Array(a.n).fill(7) }),
  'test.progress': (_a: unknown, ctx: { progress(d: number, t: number): void }) => {
    for (let i = 1; i <= 3; i++) ctx.progress(i, 3);
    return 'done';
  },
});
