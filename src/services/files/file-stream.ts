import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';

/** A file's bytes as a Web stream, read lazily. */
export const fileStream = (path: string): ReadableStream<Uint8Array> =>
  Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
