/**
 * Streams multipart/form-data into uploaded files with busboy: each file part goes straight to disk,
 * the body is counted against the upload limit as it arrives, and on any failure every file this
 * request saved is removed again.
 */
import busboy from 'busboy';
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import type { FileStore, StoredFile } from '../services/files/file-store.ts';
import { isServiceError } from '../services/errors.ts';
import { limitedChunks, maxBytesOf, tooLarge } from './body-limit.ts';
import type { AppEnv } from './context.ts';
import { invalidRequest } from './validate.ts';

export interface MultipartBody {
  fields: Map<string, string[]>;
  /** Saved file parts in arrival order, with the form field each came from. */
  files: { field: string; file: StoredFile }[];
}

export const isMultipart = (c: Context) => (c.req.header('content-type') ?? '').toLowerCase().startsWith('multipart/form-data');

export async function readMultipart(c: Context<AppEnv>, store: FileStore, purpose = 'task'): Promise<MultipartBody> {
  const max = maxBytesOf(c);
  const owner = c.get('owner').id;
  const body: MultipartBody = { fields: new Map(), files: [] };
  const saves: Promise<void>[] = [];
  const arrival = new Map<StoredFile, number>();
  let overLimit: string | undefined;
  const streams: NodeJS.ReadableStream[] = [];
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: { 'content-type': c.req.header('content-type') ?? '' },
      defParamCharset: 'utf8',
      limits: { fileSize: max, files: 100, fields: 1000, fieldSize: 1024 * 1024 },
    });
  } catch (e) {
    throw invalidRequest(`malformed multipart request: ${(e as Error).message}`);
  }
  const done = new Promise<void>((resolve, reject) => {
    bb.on('field', (name, value) => body.fields.set(name, [...(body.fields.get(name) ?? []), value]));
    bb.on('file', (field, stream, info) => {
      const index = streams.length; // arrival position: saves may finish out of order
      streams.push(stream);
      let truncated = false;
      stream.on('limit', () => {
        truncated = true;
      });
      saves.push(
        store.saveStream(owner, stream, { filename: info.filename ?? field, contentType: info.mimeType, purpose }).then(async (file) => {
          if (truncated) {
            await store.delete(owner, file.id).catch(() => {});
            throw tooLarge(max);
          }
          body.files.push({ field, file });
          arrival.set(file, index);
        }),
      );
    });
    // busboy drops parts past its limits silently: refuse the request instead of losing inputs
    bb.on('filesLimit', () => {
      overLimit ??= 'more than 100 file parts';
    });
    bb.on('fieldsLimit', () => {
      overLimit ??= 'more than 1000 fields';
    });
    bb.on('close', resolve);
    bb.on('error', (e) => reject(isServiceError(e) ? e : invalidRequest(`malformed multipart request: ${(e as Error).message}`)));
  });
  const source = Readable.from(limitedChunks(c.req.raw.body, max));
  source.on('error', (e) => {
    // Over the limit or the client went away: stop every file being written, then the parser.
    for (const st of streams) (st as unknown as { destroy(e: Error): void }).destroy(e);
    bb.destroy(e);
  });
  source.pipe(bb);
  let failure: unknown = null;
  await done.catch((e) => {
    failure = e;
  });
  // Saves are pushed while parsing, so only now is the list complete.
  for (const r of await Promise.allSettled(saves)) if (r.status === 'rejected' && !failure) failure = r.reason;
  if (!failure && overLimit) failure = invalidRequest(`malformed multipart request: ${overLimit}`);
  if (failure) {
    await Promise.all(body.files.map(({ file }) => store.delete(owner, file.id).catch(() => {})));
    throw failure;
  }
  body.files.sort((a, b) => arrival.get(a.file)! - arrival.get(b.file)!);
  return body;
}
