/**
 * WebSocket mode of /v1/responses: `response.create` messages on one connection, answered one after the
 * other with the same events as the SSE stream (one JSON text message each). Responses made on the
 * connection, store:false ones included, can be continued there through previous_response_id; a failed
 * continuation forgets the response it continued, and a closed connection forgets them all, after which
 * continuing one answers previous_response_not_found. Failures are `{"type":"error","status":…,"error":{…}}`.
 */
import type { AgentService } from '../../services/agents/agent-service.ts';
import type { Context } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { errorPayload } from '../../http/errors.ts';
import type { Logger } from '../../log.ts';
import { parseResponsesBody } from '../../schemas/responses.ts';
import { acceptWebSocket, type WsPeer } from '../../runtime/websocket.ts';
import { isServiceError, ServiceError } from '../../services/errors.ts';
import type { ConnectionCache, ResponsesService } from '../../services/responses/responses-service.ts';

/** Responses a connection remembers for continuation (the oldest is forgotten first). */
const CACHE_LIMIT = 32;

export function responsesWebSocket(c: Context<AppEnv>, responses: ResponsesService, log: Logger, agents?: AgentService): Response {
  const owner = c.get('owner').id;
  const cache: ConnectionCache = new Map();
  const closed = new AbortController();
  let queue = Promise.resolve();

  const sendError = (peer: WsPeer, err: unknown) => {
    const e = isServiceError(err) ? err : new ServiceError(500, 'internal_error', 'Internal server error');
    if (!isServiceError(err)) log.error('responses websocket turn failed', err);
    const { error } = errorPayload(e, 'openai').body as { error: Record<string, unknown> };
    peer.send(JSON.stringify({ type: 'error', status: e.status, error }));
  };

  async function turn(peer: WsPeer, text: string): Promise<void> {
    let prev: string | undefined;
    try {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(text);
      } catch {
        throw new ServiceError(400, 'invalid_request', 'a message must be a JSON object', {
          details: [{ field: '(message)', message: 'malformed JSON' }],
        });
      }
      if (!msg || typeof msg !== 'object' || msg.type !== 'response.create') {
        throw new ServiceError(400, 'invalid_request', 'type: only "response.create" messages are accepted', {
          details: [{ field: 'type', message: 'unsupported' }],
        });
      }
      const { type: _type, ...body } = msg;
      for (const k of ['stream', 'stream_options']) {
        if (k in body) {
          throw new ServiceError(400, 'invalid_request', `${k}: not sent in WebSocket mode (every response streams)`, {
            details: [{ field: k, message: 'not allowed' }],
          });
        }
      }
      prev = typeof body.previous_response_id === 'string' ? body.previous_response_id : undefined;
      const applied = agents ? await agents.applyToResponses(owner, body) : body;
      const started = await responses.create(owner, parseResponsesBody({ ...applied, stream: true }), { signal: closed.signal, cache });
      let failed = false;
      try {
        for await (const e of started.events) {
          if (closed.signal.aborted) return;
          if (e.type === 'response.failed') failed = true;
          peer.send(JSON.stringify(e));
        }
      } catch (e) {
        if (!failed) throw e; // a failure already told as response.failed needs no second message
      }
      if (failed && prev) cache.delete(prev);
      while (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    } catch (e) {
      if (prev) cache.delete(prev);
      if (!closed.signal.aborted) sendError(peer, e);
    }
  }

  return acceptWebSocket(c.req.raw, {
    message(peer, text) {
      queue = queue.then(() => turn(peer, text));
    },
    close() {
      closed.abort();
      cache.clear();
    },
  });
}
