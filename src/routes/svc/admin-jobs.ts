/** Operator view: every active task of every key on this node, and cancel any of them. */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { notFound } from '../../services/errors.ts';
import type { TaskRunner } from '../../services/jobs/task-runner.ts';

export function adminJobRoutes(runner: TaskRunner) {
  const app = new Hono<AppEnv>();
  app.get('/jobs', (c) => c.json({ object: 'list', data: runner.active() }));
  app.delete('/jobs/:id', async (c) => {
    const id = c.req.param('id');
    if (!(await runner.cancel(id, 'operator'))) throw notFound(`no active job '${id}' on this node`);
    return c.json({ job_id: id, status: 'cancelled' });
  });
  return app;
}
