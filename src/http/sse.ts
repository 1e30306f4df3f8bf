/**
 * Server-sent events. Dialect A streams (`text/event-stream`): one `data: <json>` event per chunk, then
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

function streamError(err: unknown, o: SseOptions): ServiceError {
  let e: ServiceError;
  if (isServiceError(err)) e = err;
  else {
    o.logError?.(`stream failed rid=${o.requestId ?? 'unknown'}`, err);
    e = new ServiceError(500, 'internal_error', `Internal server error (request id ${o.requestId ?? 'unknown'})`);
  }
  return e;
}

const errorEvent = (err: unknown, o: SseOptions) => event(errorPayload(streamError(err, o), 'openai').body);

const SSE_HEADERS = { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache', Connection: 'keep-alive' };

export async function sseResponse(c: Context, chunks: AsyncIterable<unknown>, o: SseOptions = {}): Promise<Response> {
  const body = await streamBody(chunks, { item: event, error: (err) => errorEvent(err, o), end: DONE, onEnd: streamEnd(c) });
  // Through the context: the headers prepared for every response (X-Svc-Node) stay on it.
  return c.body(body, 200, SSE_HEADERS);
}

/**
 * The Anthropic Messages stream: each item `{type, ...}` is sent as `event: <type>` with the item as its
 * data; no terminator. A failure after the stream began is a last `event: error` carrying Anthropic's
 * error envelope (the official SDK raises it as an API error).
 */
export async function namedSseResponse(c: Context, items: AsyncIterable<{ type: string }>, o: SseOptions = {}): Promise<Response> {
  const named = (v: unknown) => encoder.encode(`event: ${(v as { type: string }).type}\ndata: ${JSON.stringify(v)}\n\n`);
  const body = await streamBody(items, { item: named, error: (err) => named(errorPayload(streamError(err, o), 'anthropic').body) });
  return c.body(body, 200, SSE_HEADERS);
}
