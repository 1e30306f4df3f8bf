/** Streams an uploaded file of the caller back (404 when unknown, expired or another owner's). */
import type { Context } from 'hono';
import type { FileStore } from '../services/files/file-store.ts';
import { fileStream } from '../services/files/file-stream.ts';
import type { AppEnv } from './context.ts';

export async function fileContent(c: Context<AppEnv>, files: FileStore): Promise<Response> {
  const f = await files.get(c.get('owner').id, c.req.param('id')!);
  return c.body(fileStream(f.path), 200, { 'Content-Type': f.content_type, 'Content-Length': String(f.bytes) });
}
