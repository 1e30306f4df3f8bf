/** Level-aware logging to stderr (stdout stays free for CLI output). */
import process from 'node:process';
export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export interface Logger {
  level: Level;
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string, err?: unknown): void;
  /** An access-log line at info level; lines are batched into one write per event-loop turn. */
  access(msg: string): void;
}

export function createLogger(level: Level = 'info'): Logger {
  const at = (l: Level) => order[l] >= order[log.level];
  const write = (l: Level, msg: string) => console.error(`${new Date().toISOString()} ${l.toUpperCase().padEnd(5)} ${msg}`);
  let pending: string[] = [];
  const flush = () => {
    const text = pending.join('');
    pending = [];
    process.stderr.write(text);
  };
  const log: Logger = {
    level,
    debug: (m) => at('debug') && write('debug', m),
    info: (m) => at('info') && write('info', m),
    access: (m) => {
      if (!at('info')) return;
      if (pending.length === 0) setTimeout(flush, 0);
      pending.push(`${new Date().toISOString()} INFO  ${m}\n`);
    },
    warn: (m) => at('warn') && write('warn', m),
    error: (m, err) => {
      if (!at('error')) return;
      write('error', err instanceof Error ? `${m}: ${err.stack ?? err.message}` : err ? `${m}: ${String(err)}` : m);
    },
  };
  return log;
}
