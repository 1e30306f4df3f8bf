/**
 * Ollama's keep_alive forms → milliseconds: a number is seconds, a string is a Go-style duration
 * ("5m", "1h30m", "90s", "300ms") or plain seconds ("300"); negative = forever (Infinity); 0 = unload now.
 */
import { invalidArgument } from '../errors.ts';

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseKeepAlive(value: unknown, defaultSeconds: number): number {
  if (value === undefined || value === null || value === '') return secondsToMs(defaultSeconds);
  if (typeof value === 'number' && Number.isFinite(value)) return secondsToMs(value);
  if (typeof value === 'string') {
    const s = value.trim();
    if (/^[-+]?\d+(\.\d+)?$/.test(s)) return secondsToMs(Number(s));
    const m = /^([-+]?)((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)$/.exec(s);
    if (m) {
      let ms = 0;
      for (const [, n, u] of m[2].matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(n) * UNIT_MS[u];
      return m[1] === '-' && ms > 0 ? Infinity : ms;
    }
  }
  throw invalidArgument(`keep_alive: "${String(value)}" is not a duration (examples: "5m", "1h", 300, -1, 0)`);
}

const secondsToMs = (s: number) => (s < 0 ? Infinity : s * 1000);
