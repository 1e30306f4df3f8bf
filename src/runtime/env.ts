/** The only place that asks which runtime we are on. */
import process from 'node:process';
import { homedir } from 'node:os';

export type RuntimeName = 'deno' | 'bun' | 'node';

const g = globalThis as { Deno?: { args: string[]; version: { deno: string } }; Bun?: { version: string } };

export const runtimeName: RuntimeName = g.Deno ? 'deno' : g.Bun ? 'bun' : 'node';

export const runtimeVersion = (): string =>
  g.Deno ? `deno ${g.Deno.version.deno}` : g.Bun ? `bun ${g.Bun.version}` : `node ${process.versions.node}`;

/** Command-line words after the program (and script) name. */
export const cliArgs = (): string[] => (g.Deno ? [...g.Deno.args] : process.argv.slice(2));

export const envVars = (): Record<string, string | undefined> => ({ ...process.env });

/**
 * Sets a variable in the process environment itself, where native libraries loaded into the process read it
 * (getenv). Node's `process.env` and `Deno.env` write through; Bun's `process.env` does not, so there libc's
 * setenv is called. False where it could not be set.
 */
export async function setNativeEnv(name: string, value: string): Promise<boolean> {
  process.env[name] = value;
  if (!g.Bun) return true;
  try {
    const { dlopen, FFIType } = await import('bun:ffi' as string);
    const libc = process.platform === 'darwin' ? 'libc.dylib' : 'libc.so.6';
    const { symbols, close } = dlopen(libc, { setenv: { args: [FFIType.cstring, FFIType.cstring, FFIType.i32], returns: FFIType.i32 } });
    const c = (s: string) => new TextEncoder().encode(`${s}\0`);
    const ok = symbols.setenv(c(name), c(value), 1) === 0;
    close();
    return ok;
  } catch {
    return false;
  }
}

export const homeDir = (): string => homedir();

export const exit = (code: number): never => process.exit(code);

/** Runs `fn` once on SIGINT or SIGTERM. */
export function onShutdownSignal(fn: (signal: string) => void): void {
  let fired = false;
  const once = (sig: string) => {
    if (fired) return exit(130);
    fired = true;
    fn(sig);
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => once(sig));
}

/** Lets the process exit while a housekeeping timer is pending. */
export function unrefTimer(timer: unknown): void {
  const d = (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno;
  if (d && typeof timer === 'number') d.unrefTimer(timer);
  else (timer as { unref?: () => void }).unref?.();
}
