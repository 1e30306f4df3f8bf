/**
 * onnxruntime-node, loaded with its telemetry off. Its Linux build (1.30) records usage events (the runtime,
 * the OS, the execution providers used, a persistent device id) in an SQLite file under
 * `~/.cache/Microsoft/DeveloperTools/.onnxruntime`, writes a `mat-debug-<pid>.log` into the temporary
 * directory, and carries a Microsoft collector address to upload them to. A local server does none of that
 * unless its operator asks: `ORT_DISABLE_TELEMETRY=1` is set in the process environment, where the library
 * reads it when it starts, unless the variable is already set (to anything).
 */
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
