/** GET /svc/v1/jobs/{job_id} polls; DELETE cancels (202 with cancel_requested when it runs on another node). */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { nodeCookie } from '../../http/task-route.ts';
import type { JobRecords } from '../../services/jobs/job-records.ts';

export function jobRoutes(jobs: JobRecords) {
  const app = new Hono<AppEnv>();
  const json = { 'Content-Type': 'application/json' };
  app.get('/jobs/:id', async (c) => c.body(await jobs.poll(c.req.param('id'), c.get('owner').id), 200, json));
  app.delete('/jobs/:id', async (c) => {
    const r = await jobs.cancel(c.req.param('id'), c.get('owner').id);
    // Another node runs it (so this is a fleet): the cookie points the client's next polls there.
    if (r.kind === 'requested') return c.json({ cancel_requested: true, node: r.node }, 202, { 'Set-Cookie': nodeCookie(r.node) });
    return c.body(r.record, 200, json);
  });
  return app;
}
