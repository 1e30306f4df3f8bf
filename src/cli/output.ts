/** How the client commands print: one-line errors, colours only on a terminal, byte sizes and durations. */
import { stderrIsTTY, stdoutIsTTY, writeErr } from '../runtime/process.ts';
import { envVars } from '../runtime/env.ts';

const colour = (code: number) => (s: string, tty = stdoutIsTTY()) => (tty && !envVars().NO_COLOR ? `\x1b[${code}m${s}\x1b[0m` : s);
export const dim = colour(2);
export const bold = colour(1);
export const red = colour(31);
export const green = colour(32);

/** `svc: <reason>: <message>` on stderr, one line whatever the message holds. */
export function printError(message: string): void {
  writeErr(`${red('svc:', stderrIsTTY())} ${message.replace(/\s*\n\s*/g, ' ')}\n`);
}

export function humanBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '?';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

export function humanDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 60) return `${Math.ceil(seconds)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(Math.ceil(seconds % 60)).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;
}

/** "3 minutes ago"-style age of an ISO timestamp. */
export function humanAge(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const s = (now - Date.parse(iso)) / 1000;
  if (!Number.isFinite(s)) return '';
  if (s < 60) return 'just now';
  const [n, unit] = s < 3600
    ? [s / 60, 'minute']
    : s < 86400
    ? [s / 3600, 'hour']
    : s < 86400 * 30
    ? [s / 86400, 'day']
    : [s / (86400 * 30), 'month'];
  const k = Math.floor(n);
  return `${k} ${unit}${k === 1 ? '' : 's'} ago`;
}

/** Left-aligned columns separated by three spaces, as `ollama list` prints them. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('   ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
