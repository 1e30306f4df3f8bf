/** The peer address of a request, read from what each runtime's server hands the fetch handler. */
import { runtimeName } from './env.ts';

// deno-lint-ignore no-explicit-any
type Any = any;

export function clientAddress(req: Request, env: unknown): string | null {
  const e = env as Any;
  try {
    if (runtimeName === 'deno') return e?.remoteAddr?.hostname ?? null;
    if (runtimeName === 'bun') return e?.requestIP?.(req)?.address ?? null;
    return e?.incoming?.socket?.remoteAddress ?? null;
  } catch {
    return null;
  }
}
