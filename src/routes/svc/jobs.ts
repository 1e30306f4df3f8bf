/** GET /svc/v1/jobs/{job_id} polls; DELETE cancels (202 with cancel_requested when it runs on another node). */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import type { JobRecords } from '../../services/jobs/job-records.ts';

export function jobRoutes(jobs: JobRecords) {
  const app = new Hono<AppEnv>();
  const json = { 'Content-Type': 'application/json' };
  app.get('/jobs/:id', async (c) => c.body(await jobs.poll(c.req.param('id'), c.get('owner').id), 200, json));
  app.delete('/jobs/:id', async (c) => {
    const r = await jobs.cancel(c.req.param('id'), c.get('owner').id);
    return r.kind === 'requested' ? c.json({ cancel_requested: true, node: r.node }, 202) : c.body(r.record, 200, json);
  });
  return app;
}
