/**
 * The maximum upload size, enforced at the door: a declared Content-Length over the limit is refused
 * before any byte is read, and an undeclared (chunked) body is counted while it streams.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { concatBytes } from '../services/bytes.ts';
import { ServiceError } from '../services/errors.ts';

export const tooLarge = (limit: number) =>
  new ServiceError(
    413,
    'request_too_large',
    `request body exceeds the maximum upload size of ${limit} bytes; upload the file first (POST /svc/v1/files/upload) and pass its file id instead`,
  );

export const maxBytesOf = (c: Context): number => c.get('maxUploadBytes') as number;

export function bodyLimit(maxBytes: number): MiddlewareHandler {
  return (c, next) => {
    c.set('maxUploadBytes', maxBytes);
    // GET and HEAD carry no body: skip the header read (on Deno the first header access is costly).
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const len = c.req.header('content-length');
      if (len !== undefined && Number(len) > maxBytes) throw tooLarge(maxBytes);
    }
    return next();
  };
}

/** Yields the body's chunks, throwing 413 as soon as more than `max` bytes arrived. */
export async function* limitedChunks(body: ReadableStream<Uint8Array> | null, max: number): AsyncGenerator<Uint8Array> {
  if (!body) return;
  let total = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      total += value.byteLength;
      if (total > max) throw tooLarge(max);
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/** The whole body in memory, for JSON requests (bounded by the same limit). */
export async function readBodyLimited(c: Context): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of limitedChunks(c.req.raw.body, maxBytesOf(c))) parts.push(chunk);
  return concatBytes(parts);
}
