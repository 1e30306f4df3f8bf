/**
 * Declares a task route: the one helper that gives every native task (and POST /v1/embeddings) the
 * whole job contract. A route supplies how to read its input and the task; the runner decides whether
 * it runs inline or as a job, and this helper shapes the answer.
 */
import type { Context, Handler } from 'hono';
import { ServiceError } from '../services/errors.ts';
import type { Task } from '../services/jobs/task.ts';
import type { TaskRunner } from '../services/jobs/task-runner.ts';
import type { AppEnv } from './context.ts';

export interface TaskRouteDef<I> extends Task<I> {
  /** Reads and validates the request (uploads are streamed to disk here, before admission). */
  input(c: Context<AppEnv>): Promise<I>;
  /** Removes what input() created, once the work is over (or was never admitted). */
  cleanup?(input: I): Promise<void>;
}

/** RFC 6266: an ASCII `filename` for old clients plus `filename*` in UTF-8 (a header cannot carry other characters). */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  if (ascii === filename) return `attachment; filename="${ascii}"`;
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** The balancer's routing cookie: a cookie-aware client's next requests reach the node `tag` (docs/fleet.md). */
export const nodeCookie = (tag: string) => `svc-node=${tag}; Path=/; HttpOnly; SameSite=Lax`;

export const prefersAsync = (c: Context) => /(^|[\s,;])respond-async([\s,;]|$)/i.test(c.req.header('prefer') ?? '');

export function taskHandler<I>(runner: TaskRunner, def: TaskRouteDef<I>): Handler<AppEnv> {
  const task: Task<I> = {
    name: def.name,
    run: async (input, ctx) => {
      try {
        return await def.run(input, ctx);
      } finally {
        await def.cleanup?.(input);
      }
    },
  };
  return async (c) => {
    const input = await def.input(c);
    let submission;
    try {
      submission = await runner.submit(task, input, {
        owner: c.get('owner'),
        preferAsync: prefersAsync(c),
        clientSignal: c.req.raw.signal,
      });
    } catch (e) {
      await def.cleanup?.(input); // refused at admission (429): nothing ran
      throw e;
    }
    switch (submission.kind) {
      case 'accepted': {
        const location = `/svc/v1/jobs/${submission.jobId}`;
        // The balancer routes the polls of a cookie-aware client back to this node (docs/fleet.md).
        if (runner.fleetMember) c.header('Set-Cookie', nodeCookie(runner.nodeTag));
        return c.json(
          {
            job_id: submission.jobId,
            status: 'processing',
            message:
              `The ${submission.task} task is running as a background job; poll GET ${location} until its status is no longer processing.`,
          },
          202,
          { Location: location },
        );
      }
      case 'closed':
        if (submission.by === 'client') c.set('clientClosed', true);
        throw new ServiceError(
          499,
          'cancelled',
          submission.by === 'cancel' ? 'the task was cancelled' : 'the client closed the connection',
        );
      case 'inline': {
        const o = submission.outcome;
        if (!o.ok) throw o.error;
        if ('json' in o) return c.body(o.json, 200, { 'Content-Type': 'application/json' });
        const headers: Record<string, string> = { 'Content-Type': o.binary.contentType };
        if (o.binary.filename) headers['Content-Disposition'] = contentDisposition(o.binary.filename);
        return c.body(o.binary.bytes as Uint8Array<ArrayBuffer>, 200, headers);
      }
    }
  };
}
