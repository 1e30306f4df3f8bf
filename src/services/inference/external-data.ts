/**
 * onnxruntime-web cannot read files: a model whose weights lie in external data files (every model over
 * protobuf's 2 GB, and many hub exports below it) loads only when those files come with it as bytes.
 * transformers.js hands them over only outside Node-like runtimes; under Node, Deno and Bun it passes the
 * model's path alone, which onnxruntime-node resolves itself. Here the files the graph names are read from
 * beside the model.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { externalFilesOf } from '../models/onnx-wire.ts';

export type ExternalData = { path: string; data: string | Uint8Array }[];

/** A path's bytes, or the bytes given. */
export const bytes = (v: string | Uint8Array) => (typeof v === 'string' ? new Uint8Array(readFileSync(v)) : v);

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
