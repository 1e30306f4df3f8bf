/**
 * POST /v1/chat/completions. The body is validated by its schema (src/schemas/openai.ts) and planned by the chat service's dialect A module (refusals,
 * extensions, structured output, forced tool calls); the answer is one chat.completion, or SSE chunks
 * ending with [DONE]. Failures before the first chunk are statuses; after, an error event. A client that
 * disconnects aborts the generation (the request's signal), which frees its slot.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { sseResponse } from '../../http/sse.ts';
import { jsonBody } from '../../http/validate.ts';
import { ChatBody, openaiWording, parseChatBody } from '../../schemas/openai.ts';
import type { Logger } from '../../log.ts';
import type { ChatService } from '../../services/chat/chat-service.ts';
import { chatChunks, chatCompletion, planChat } from '../../services/chat/openai-chat.ts';
import type { AgentService } from '../../services/agents/agent-service.ts';
import { type AgentTurns, completionChunks, usesExtensions } from '../../services/agents/agent-turn.ts';
import type { Dispatch } from '../../services/tools/tool-call.ts';

/** Server tools and memory: the turn service and how its native tools reach the routes in-process. */
export interface TurnDeps {
  turns: AgentTurns;
  dispatch: Dispatch;
}

export function openaiChatRoutes(chat: ChatService, log: Logger, agents?: AgentService, turn?: TurnDeps) {
  const app = new Hono<AppEnv>();
  app.post('/chat/completions', jsonBody(ChatBody, openaiWording), async (c) => {
    const body = c.req.valid('json');
    // an agent and a skill become plain chat fields first (unknown names: 400); what the agent's stored
    // config adds is checked as a client's fields are
    const applied = agents ? parseChatBody(await agents.applyToChat(c.get('owner').id, body)) : body;
    if (turn && usesExtensions(applied)) {
      // server tools and memory: the whole turn runs here; a stream is sent once it is done
      const owner = c.get('owner').id;
      const ext = await turn.turns.extensions(owner, applied, c.req.raw.signal);
      const headers: Record<string, string> = {};
      for (const h of ['authorization', 'x-api-key']) {
        const v = c.req.header(h);
        if (v) headers[h] = v;
      }
      const answer = await turn.turns.run(owner, applied, ext, { dispatch: turn.dispatch, headers, signal: c.req.raw.signal });
      if (applied.stream !== true) return c.json(answer);
      const includeUsage = applied.stream_options?.include_usage === true;
      return sseResponse(
        c,
        (async function* () {
          yield* completionChunks(answer, includeUsage);
        })(),
        { logError: log.error, requestId: c.get('requestId') },
      );
    }
    const plan = planChat(applied, c.req.raw.signal);
    if (!plan.stream) return c.json(await chatCompletion(chat, plan));
    const s = await chat.chat(plan.request);
    return sseResponse(c, chatChunks(s, plan), { logError: log.error, requestId: c.get('requestId') });
  });
  return app;
}
