/**
 * onnxruntime-web cannot read files: a model whose weights lie in external data files (every model over
 * protobuf's 2 GB, and many hub exports below it) loads only when those files come with it as bytes.
 * transformers.js hands them over only outside Node-like runtimes; under Node, Deno and Bun it passes the
 * model's path alone, which onnxruntime-node resolves itself. Here the files the graph names are read from
 * beside the model.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { containsBytes, externalFilesOf } from '../models/onnx-wire.ts';

export type ExternalData = { path: string; data: string | Uint8Array }[];

/** A path's bytes, or the bytes given. */
export const bytes = (v: string | Uint8Array) => (typeof v === 'string' ? new Uint8Array(readFileSync(v)) : v);

/**
 * Whether the file holds any of `needles`, read in chunks: a large model is not held in memory just to learn
 * that no edit applies to it.
 */
export function fileContains(path: string, needles: Uint8Array[], chunk = 8 << 20): boolean {
  const fd = openSync(path, 'r');
  try {
    // each read keeps the chunk's last bytes in front of the next, so a needle across the seam is seen
    const keep = Math.max(0, ...needles.map((x) => x.length - 1)), buf = new Uint8Array(chunk + keep);
    let have = 0;
    for (let n; (n = readSync(fd, buf, have, chunk, null)) > 0;) {
      const end = have + n;
      if (needles.some((x) => containsBytes(buf.subarray(0, end), x))) return true;
      have = Math.min(keep, end);
      buf.copyWithin(0, end - have, end);
    }
    return false;
  } finally {
    closeSync(fd);
  }
}

/** A model (path or bytes) as bytes, with its external data as bytes: the files given, or those it names. */
export function modelWithExternalData(
  model: string | Uint8Array,
  given?: ExternalData,
): { graph: Uint8Array; externalData?: { path: string; data: Uint8Array }[] } {
  const graph = bytes(model);
  const named = given ??
    (typeof model === 'string' ? externalFilesOf(graph).map((path) => ({ path, data: join(dirname(model), path) })) : []);
  return { graph, externalData: named.length ? named.map((d) => ({ path: d.path, data: bytes(d.data) })) : undefined };
}
