/**
 * onnxruntime-node, loaded with its telemetry off. Its Linux build (1.30) records usage events (the runtime,
 * the OS, the execution providers used, a persistent device id) in an SQLite file under
 * `~/.cache/Microsoft/DeveloperTools/.onnxruntime`, writes a `mat-debug-<pid>.log` into the temporary
 * directory, and carries a Microsoft collector address to upload them to. A local server does none of that
 * unless its operator asks: `ORT_DISABLE_TELEMETRY=1` is set in the process environment, where the library
 * reads it when it starts, unless the variable is already set (to anything).
 */
import { createRequire } from 'node:module';
import { envVars, setNativeEnv } from '../../runtime/env.ts';

type OnnxruntimeNode = typeof import('onnxruntime-node');

let loading: Promise<OnnxruntimeNode> | undefined;

export function importOnnxruntimeNode(): Promise<OnnxruntimeNode> {
  loading ??= (async () => {
    if (envVars().ORT_DISABLE_TELEMETRY === undefined) await setNativeEnv('ORT_DISABLE_TELEMETRY', '1');
    return await import('onnxruntime-node');
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}

/** A session of onnxruntime-node's binding itself, whose `run` computes before it returns. */
export interface SyncSession {
  run(feeds: Record<string, unknown>, fetches: Record<string, unknown>, options: Record<string, unknown>): Record<string, unknown>;
  dispose(): void;
}

/**
 * A session created through onnxruntime-node's binding, for code that runs many small graphs in turn
 * (./split-session.ts): the package's own `run` waits for the next turn of the event loop (`setImmediate`)
 * before it computes, which costs more than a small graph's work. Undefined where the binding is not where
 * this version of the package keeps it. Call after importOnnxruntimeNode().
 */
export function syncSession(model: Uint8Array, options: Record<string, unknown>): SyncSession | undefined {
  let b: { binding: { InferenceSession: new () => SyncSession & { loadModel(...a: unknown[]): void } }; initOrt(): void };
  try {
    b = createRequire(import.meta.url)('onnxruntime-node/dist/binding.js');
  } catch {
    return undefined;
  }
  b.initOrt();
  const s = new b.binding.InferenceSession();
  s.loadModel(model.buffer, model.byteOffset, model.byteLength, options);
  return s;
}
