/**
 * A test-only task route (POST /svc/v1/test/work), registered by the tests through createApp's
 * extraRoutes; the server never exposes it. It waits, fails, returns JSON or bytes as told.
 */
import assert from 'node:assert/strict';
import type { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../src/http/context.ts';
import { taskHandler } from '../../src/http/task-route.ts';
import { readJson } from '../../src/http/validate.ts';
import type { Deps } from '../../src/deps.ts';
import { ServiceError } from '../../src/services/errors.ts';
import { BinaryResult } from '../../src/services/jobs/task.ts';
import { type InProcess, json } from './server.ts';

const Input = v.object({
  ms: v.optional(v.number(), 0),
  gate: v.optional(v.string()),
  /** A gate waited on without heeding the abort signal, as a long native call does not. */
  deafGate: v.optional(v.string()),
  value: v.optional(v.unknown()),
  bytes: v.optional(v.number()),
  binary: v.optional(v.string()),
  fail: v.optional(v.object({ status: v.number(), reason: v.string(), message: v.string() })),
  crash: v.optional(v.boolean()),
});

/** What the test task did, and gates a test opens to let a waiting task go on. */
export class TaskProbe {
  started = 0;
  finished = 0;
  aborted = 0;
  #opened = new Set<string>();
  #waiting = new Map<string, () => void>();

  open(name: string): void {
    this.#opened.add(name);
    this.#waiting.get(name)?.();
  }

  wait(name: string): Promise<void> {
    return this.#opened.has(name) ? Promise.resolve() : new Promise<void>((r) => this.#waiting.set(name, r));
  }
}

export function testTasks(probe: TaskProbe) {
  return (app: Hono<AppEnv>, deps: Deps) => {
    app.post(
      '/svc/v1/test/work',
      taskHandler(deps.runner, {
        name: 'test-work',
        input: (c) => readJson(c, Input),
        async run(input, ctx) {
          probe.started++;
          const aborted = new Promise<never>((_, j) =>
            ctx.signal.addEventListener('abort', () => {
              probe.aborted++;
              j(ctx.signal.reason);
            }, { once: true })
          );
          ctx.progress(0, 2);
          if (input.gate) await Promise.race([probe.wait(input.gate), aborted]);
          if (input.deafGate) await probe.wait(input.deafGate);
          if (input.ms) await Promise.race([new Promise((r) => setTimeout(r, input.ms)), aborted]);
          ctx.progress(1, 2);
          if (input.fail) throw new ServiceError(input.fail.status, input.fail.reason, input.fail.message);
          if (input.crash) throw new Error('secret internal detail');
          probe.finished++;
          ctx.progress(2, 2);
          if (input.binary) return new BinaryResult(new TextEncoder().encode(input.binary), 'application/octet-stream', 'out.bin');
          if (input.bytes) return { blob: 'x'.repeat(input.bytes) };
          return { echo: input.value ?? null, answer: 42 };
        },
      }),
    );
  };
}

/** What node `b` answers for a job once it no longer reads it as in progress (200); polled for 5 s at most. */
export async function otherNodeAnswer(b: InProcess, jobId: string): Promise<Response> {
  let res!: Response;
  for (let i = 0; i < 100; i++) {
    res = await b.request(`/svc/v1/jobs/${jobId}`);
    if (res.status !== 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return res;
}

/** A job that waits on `gate` forever, started on node `a` and cancelled through node `b`: 202 naming `a`, then cancelled. */
export async function assertCancelAcrossNodes(a: InProcess, b: InProcess, gate: string): Promise<void> {
  const slow = await (await a.request('/svc/v1/test/work', json({ gate }, { prefer: 'respond-async' }))).json();
  const del = await b.request(`/svc/v1/jobs/${slow.job_id}`, { method: 'DELETE' });
  assert.equal(del.status, 202);
  assert.deepEqual(await del.json(), { cancel_requested: true, node: a.s.nodeTag });
  let status = 'processing';
  for (let i = 0; i < 60 && status === 'processing'; i++) {
    await new Promise((r) => setTimeout(r, 100));
    status = (await (await b.request(`/svc/v1/jobs/${slow.job_id}`)).json()).status;
  }
  assert.equal(status, 'cancelled');
}
