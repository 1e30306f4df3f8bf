/**
 * Server-sent events for dialect A streams (`text/event-stream`): one `data: <json>` event per chunk, then
 * `data: [DONE]`. The first chunk is awaited before the response is committed, so a failure before anything
 * was produced answers with its HTTP status and the dialect A envelope. A failure after the stream began is
 * told in-band as a last event `data: {"error":{message,type,code,param}}` (no [DONE] follows; the official
 * clients raise it as an API error). A client that disconnects cancels the stream: `return()` is called on
 * the iterator, which ends the producer (a generation is aborted and its slot freed).
 */
import type { Context } from 'hono';
import { isServiceError, ServiceError } from '../services/errors.ts';
import { errorPayload } from './errors.ts';
import { streamBody } from './stream-body.ts';
import { streamEnd } from './stream-end.ts';

export interface SseOptions {
  logError?: (msg: string, err: unknown) => void;
  requestId?: string;
}

const encoder = new TextEncoder();
const event = (v: unknown) => encoder.encode(`data: ${JSON.stringify(v)}\n\n`);
const DONE = encoder.encode('data: [DONE]\n\n');

function errorEvent(err: unknown, o: SseOptions): Uint8Array {
  let e: ServiceError;
  if (isServiceError(err)) e = err;
  else {
    o.logError?.(`stream failed rid=${o.requestId ?? 'unknown'}`, err);
    e = new ServiceError(500, 'internal_error', `Internal server error (request id ${o.requestId ?? 'unknown'})`);
  }
  return event(errorPayload(e, 'openai').body);
}

export async function sseResponse(c: Context, chunks: AsyncIterable<unknown>, o: SseOptions = {}): Promise<Response> {
  const body = await streamBody(chunks, { item: event, error: (err) => errorEvent(err, o), end: DONE, onEnd: streamEnd(c) });
  // Through the context: the headers prepared for every response (X-Svc-Node) stay on it.
  return c.body(body, 200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
}
