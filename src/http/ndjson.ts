/**
 * NDJSON streaming (application/x-ndjson): one JSON object per line, as dialect B streams chat, generate,
 * pull and create. The first item is awaited before the response is committed, so a failure before
 * anything was produced still answers with its HTTP status and the family's error body. A failure after
 * the stream began can only be told in-band: it becomes a last line `{"error": "..."}` (Ollama's shape).
 * A client that disconnects cancels the stream, which calls `return()` on the iterator: the producer
 * decides whether its work goes on (a pull does).
 */
import type { Context } from 'hono';
import { isServiceError } from '../services/errors.ts';
import { streamBody } from './stream-body.ts';
import { streamEnd } from './stream-end.ts';

export interface NdjsonOptions {
  /** Logs a failure after the stream began that is not a ServiceError (its message is not shown). */
  logError?: (msg: string, err: unknown) => void;
  requestId?: string;
}

const encoder = new TextEncoder();
const line = (v: unknown) => encoder.encode(`${JSON.stringify(v)}\n`);

function errorLine(err: unknown, o: NdjsonOptions): Uint8Array {
  if (isServiceError(err)) return line({ error: err.message });
  o.logError?.(`stream failed rid=${o.requestId ?? 'unknown'}`, err);
  return line({ error: `Internal server error (request id ${o.requestId ?? 'unknown'})` });
}

/** Streams `items` as NDJSON; throws (before any byte is sent) when the first item fails. */
export async function ndjsonResponse(c: Context, items: AsyncIterable<unknown>, o: NdjsonOptions = {}, status = 200): Promise<Response> {
  const body = await streamBody(items, { item: line, error: (err) => errorLine(err, o), onEnd: streamEnd(c) });
  // Through the context: the headers prepared for every response (X-Svc-Node) stay on it.
  return c.body(body, status as 200, { 'Content-Type': 'application/x-ndjson' });
}

/** Drains `items` and returns the last one (the `stream: false` form of a progress stream). */
export async function lastOf<T>(items: AsyncIterable<T>): Promise<T | undefined> {
  let last: T | undefined;
  for await (const v of items) last = v;
  return last;
}
