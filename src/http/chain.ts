/**
 * Several middleware run as one layer. Hono runs each middleware in an async dispatch step of its own (a
 * promise, an await and an error trap per layer); for the handful every request passes, that costs more
 * than their own work on a small request (`/api/version`, `/health`). Here the steps call each other
 * directly. As under Hono, an error a step throws becomes the answer right there (`onError`: the app's
 * error mapper), so the steps around it still see a finished response, and a step may answer by
 * returning a Response.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './context.ts';

export function chain(
  steps: MiddlewareHandler<AppEnv>[],
  onError: (err: Error, c: Context<AppEnv>) => Response | Promise<Response>,
): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const answered = (r: Response | void) => {
      if (r && !c.finalized) c.res = r;
    };
    const failed = async (err: unknown) => {
      if (!(err instanceof Error)) throw err;
      c.error = err;
      c.res = await onError(err, c);
    };
    const run = (i: number): Promise<void> => {
      if (i === steps.length) return next();
      let passed: Promise<void> | undefined;
      try {
        const r = steps[i]!(c, () => (passed = run(i + 1)));
        // A step that only passed on returned the next one's promise, whose errors are trapped there (by the
        // next step's wrapper, or by Hono for the route): no promise of its own.
        if (passed && r === passed) return passed;
        return Promise.resolve(r).then(answered, failed);
      } catch (err) {
        return failed(err);
      }
    };
    return run(0);
  };
}
