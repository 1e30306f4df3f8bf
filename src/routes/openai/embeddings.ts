/**
 * POST /v1/embeddings, declared through the task contract: inline within the sync timeout, else (or with
 * `Prefer: respond-async`) a 202 job whose result is this same body.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { taskHandler } from '../../http/task-route.ts';
import { readJson } from '../../http/validate.ts';
import { EmbeddingBody, openaiWording } from '../../schemas/openai.ts';
import type { ChatService } from '../../services/chat/chat-service.ts';
import { type EmbeddingPlan, embeddings, planEmbeddings } from '../../services/chat/openai-completions.ts';
import type { TaskRunner } from '../../services/jobs/task-runner.ts';

export function openaiEmbeddingRoutes(chat: ChatService, runner: TaskRunner) {
  const app = new Hono<AppEnv>();
  app.post(
    '/embeddings',
    taskHandler<EmbeddingPlan>(runner, {
      name: 'embeddings',
      input: async (c) => planEmbeddings(await readJson(c, EmbeddingBody, openaiWording)),
      run: (plan, ctx) => embeddings(chat, plan, ctx.signal),
    }),
  );
  return app;
}
