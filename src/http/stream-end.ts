/** Lets the access log wait for a streamed answer to end, so a client that left mid-stream is logged as 499. */
import type { Context } from 'hono';
import type { StreamEnd } from './context.ts';

export function streamEnd(c: Context): (how: StreamEnd) => void {
  let settle: (how: StreamEnd) => void = () => {};
  c.set('streamEnded', new Promise<StreamEnd>((r) => (settle = r)));
  let once = false;
  return (how) => {
    if (once) return;
    once = true;
    settle(how);
  };
}
