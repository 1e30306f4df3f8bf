/** Processes and terminals for the command line: how this program starts itself, and what stdio is. */
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import process from 'node:process';

const g = globalThis as { Deno?: { execPath(): string; mainModule: string }; Bun?: unknown };

/**
 * The command that starts this very program again: the compiled binary alone, or the runtime plus its
 * entry script (with the flags it was started with, e.g. tsx's loader under `npm run dev`).
 */
export function selfCommand(): { cmd: string; args: string[] } {
  if (g.Deno) {
    const main = g.Deno.mainModule;
    // A `deno compile`d binary runs its embedded module; its execPath is the program itself.
    if (!main.startsWith('file:') || /deno-compile/.test(main)) return { cmd: g.Deno.execPath(), args: [] };
    return { cmd: g.Deno.execPath(), args: ['run', '-A', main] };
  }
  const script = process.argv[1] ?? '';
  // `bun build --compile` binaries report a virtual entry under /$bunfs/.
  if (g.Bun && script.startsWith('/$bunfs/')) return { cmd: process.execPath, args: [] };
  return { cmd: process.execPath, args: [...process.execArgv, script] };
}

/** Starts a detached background process whose output goes to `logFile`; returns its pid. */
export function spawnDetached(cmd: string, args: string[], logFile: string): number | undefined {
  const out = openSync(logFile, 'a');
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', out, out], env: process.env });
  child.unref();
  return child.pid;
}

export const stdinIsTTY = (): boolean => Boolean(process.stdin.isTTY);
export const stdoutIsTTY = (): boolean => Boolean(process.stdout.isTTY);
export const stderrIsTTY = (): boolean => Boolean(process.stderr.isTTY);
export const terminalColumns = (): number => process.stderr.columns || 80;

/** Writes to stdout/stderr without a newline (progress bars, streamed tokens). */
export const writeOut = (s: string | Uint8Array): void => void process.stdout.write(s);
export const writeErr = (s: string): void => void process.stderr.write(s);

/** Reads all of standard input (a piped prompt). */
export async function readStdin(): Promise<string> {
  // Streaming decode: a character split across two chunks is still read whole.
  const utf8 = new TextDecoder();
  let text = '';
  for await (const chunk of process.stdin) text += typeof chunk === 'string' ? chunk : utf8.decode(chunk, { stream: true });
  return text + utf8.decode();
}

/** Calls `fn` on Ctrl-C (SIGINT) instead of exiting; returns a function that removes the handler. */
export function onInterrupt(fn: () => void): () => void {
  process.on('SIGINT', fn);
  return () => void process.off('SIGINT', fn);
}

export const stdin = () => process.stdin;
export const stdout = () => process.stdout;

/**
 * Interactive line input on the terminal (node:readline, which all three runtimes provide): `ask` shows a
 * prompt and resolves with the line, or null at end of input (Ctrl-D); Ctrl-C calls `onInterrupt`.
 */
export async function lineReader(onInterruptKey: () => void) {
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: Boolean(process.stdin.isTTY) });
  let closed = false;
  const waiting = new Set<(line: string | null) => void>();
  const lines: string[] = [];
  rl.on('line', (line) => {
    const w = [...waiting][0];
    if (w) {
      waiting.delete(w);
      w(line);
    } else lines.push(line);
  });
  rl.on('close', () => {
    closed = true;
    for (const w of waiting) w(null);
    waiting.clear();
  });
  rl.on('SIGINT', onInterruptKey);
  return {
    ask(prompt: string): Promise<string | null> {
      if (lines.length) return Promise.resolve(lines.shift()!);
      if (closed) return Promise.resolve(null);
      rl.setPrompt(prompt);
      rl.prompt();
      return new Promise((resolve) => waiting.add(resolve));
    },
    clearLine(): void {
      (rl as unknown as { line: string }).line = '';
    },
    close: () => rl.close(),
  };
}
