/**
 * POST /v1/embeddings, declared through the task contract: inline within the sync timeout, else (or with
 * `Prefer: respond-async`) a 202 job whose result is this same body.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { taskHandler } from '../../http/task-route.ts';
import { readJsonBody } from '../../http/validate.ts';
import type { ChatService } from '../../services/chat/chat-service.ts';
import { type EmbeddingPlan, embeddings, planEmbeddings } from '../../services/chat/openai-completions.ts';
import { ServiceError } from '../../services/errors.ts';
import type { TaskRunner } from '../../services/jobs/task-runner.ts';

export function openaiEmbeddingRoutes(chat: ChatService, runner: TaskRunner) {
  const app = new Hono<AppEnv>();
  app.post(
    '/embeddings',
    taskHandler<EmbeddingPlan>(runner, {
      name: 'embeddings',
      async input(c) {
        const body = await readJsonBody(c);
        if (!body || typeof body !== 'object' || Array.isArray(body)) {
          throw new ServiceError(400, 'invalid_request', 'the body must be a JSON object');
        }
        return planEmbeddings(body as Record<string, unknown>);
      },
      run: (plan, ctx) => embeddings(chat, plan, ctx.signal),
    }),
  );
  return app;
}
