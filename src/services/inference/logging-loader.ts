/**
 * The default loader with a log line per load naming where the model runs: the device, the ONNX Runtime
 * package, the requested backend and why a preferred option was skipped (fallbacks). The first line after
 * start-up is where the process-wide backend choice shows.
 */
import type { Logger } from '../../log.ts';
import type { BackendSetting } from './backend.ts';
import { defaultLoader, type Loader } from './residency.ts';

export function loggingLoader(o: { backend: BackendSetting; threads: number; wasmPaths?: string }, log: Pick<Logger, 'info'>): Loader {
  const load = defaultLoader({ backend: o.backend, threads: o.threads, wasmPaths: o.wasmPaths });
  return async (spec) => {
    const m = await load(spec);
    const notes = m.notes.length ? `; ${m.notes.join('; ')}` : '';
    log.info(
      `model ${spec.name} loaded on ${m.device} (${m.ort}, backend setting ${o.backend}, ${m.dtype}, ${
        (m.loadNs / 1e6).toFixed(0)
      } ms)${notes}`,
    );
    return m;
  };
}
