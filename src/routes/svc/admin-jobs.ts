/** Operator view: every active task of every key on this node, and cancel any of them. */
import { Hono } from 'hono';
import { requireAdmin } from '../../http/auth.ts';
import type { AppEnv } from '../../http/context.ts';
import { notFound } from '../../services/errors.ts';
import type { TaskRunner } from '../../services/jobs/task-runner.ts';

export function adminJobRoutes(runner: TaskRunner) {
  const app = new Hono<AppEnv>();
  app.use('/svc/v1/admin/jobs', requireAdmin());
  app.use('/svc/v1/admin/jobs/*', requireAdmin());
  app.get('/svc/v1/admin/jobs', (c) => c.json({ object: 'list', data: runner.active() }));
  app.delete('/svc/v1/admin/jobs/:id', async (c) => {
    const id = c.req.param('id');
    if (!(await runner.cancel(id, 'operator'))) throw notFound(`no active job '${id}' on this node`);
    return c.json({ job_id: id, status: 'cancelled' });
  });
  return app;
}
