/** The most recent errors and warnings the server logged, for the admin console's log view. */
import type { Logger } from '../../log.ts';

export interface LoggedError {
  at: string;
  level: 'error' | 'warn';
  message: string;
}

export class RecentErrors {
  #items: LoggedError[] = [];

  constructor(private capacity = 200) {}

  record(level: LoggedError['level'], message: string, err?: unknown): void {
    // the console shows the message, not the stack: stacks stay in the server's own log
    const detail = err instanceof Error ? `: ${err.message}` : err ? `: ${String(err)}` : '';
    this.#items.push({ at: new Date().toISOString(), level, message: `${message}${detail}`.slice(0, 2000) });
    if (this.#items.length > this.capacity) this.#items.splice(0, this.#items.length - this.capacity);
  }

  /** Newest first. */
  list(limit = 100): LoggedError[] {
    return this.#items.slice(-limit).reverse();
  }

  /** Records every error and warning of a logger, whatever its level, and still logs them. */
  attach(log: Logger): void {
    const { error, warn } = log;
    log.error = (m, e) => {
      this.record('error', m, e);
      error(m, e);
    };
    log.warn = (m) => {
      this.record('warn', m);
      warn(m);
    };
  }
}
