/**
 * transformers.js set to read models from their folders and nowhere else.
 *
 * Its file reader for local files (FileResponse) starts streaming the whole file into memory as soon as it
 * looks a file up, whether or not the bytes are then read. A session's ONNX graph and its external data are
 * handed to ONNX Runtime as paths (ONNX Runtime reads them itself), yet each was also read whole into the
 * server's thread at every load and held until collected: the benchmark model's q8 file (604 MiB) took 8.1
 * s to load and peaked at 1,741 MiB, 5.8 s and 1,167 MiB without (BENCHMARKS.md, "Model load").
 *
 * transformers.js asks its cache first, and a cache may answer with a path: so this one answers the path of a
 * model folder's ONNX files (the graph and its external data), the answer transformers.js gives sessions on
 * Node anyway, and nothing else. It asks again at the end by the file's address on the hub; with remote models
 * off, the hub's address of a file in a local folder is set to be that file's path.
 */
import { existsSync } from 'node:fs';
import { basename, isAbsolute } from 'node:path';

type Env = typeof import('@huggingface/transformers').env;

/** The path itself for an existing ONNX file (graph or external data) at an absolute path, else nothing. */
async function onnxFilePath(key: string): Promise<string | undefined> {
  return isAbsolute(key) && basename(key).includes('.onnx') && existsSync(key) ? key : undefined;
}

export function localFilesOnly(env: Env): void {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  // a file's address on the hub is remoteHost + the template (the model, here its folder) + the file's name
  env.remoteHost = '';
  env.remotePathTemplate = '{model}/';
  env.useCustomCache = true;
  env.customCache = { match: onnxFilePath, put: async () => {} };
}
