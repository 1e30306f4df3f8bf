/** Level-aware logging to stderr (stdout stays free for CLI output). */
export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export interface Logger {
  level: Level;
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string, err?: unknown): void;
}

export function createLogger(level: Level = 'info'): Logger {
  const at = (l: Level) => order[l] >= order[log.level];
  const write = (l: Level, msg: string) => console.error(`${new Date().toISOString()} ${l.toUpperCase().padEnd(5)} ${msg}`);
  const log: Logger = {
    level,
    debug: (m) => at('debug') && write('debug', m),
    info: (m) => at('info') && write('info', m),
    warn: (m) => at('warn') && write('warn', m),
    error: (m, err) => {
      if (!at('error')) return;
      write('error', err instanceof Error ? `${m}: ${err.stack ?? err.message}` : err ? `${m}: ${String(err)}` : m);
    },
  };
  return log;
}
