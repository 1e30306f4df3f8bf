/**
 * ffmpeg's WASM build (@ffmpeg/core, single thread) run in a fresh worker thread per call. The core
 * expects a browser worker (`self`, `self.location`), so the worker supplies both before loading it.
 * A deadline terminates the thread: some codecs hang or abort the build, and nothing of a failed run
 * survives into the next one.
 */
import { access, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runInWorker } from '../../runtime/worker-thread.ts';

export interface WasmRun {
  /** File to place in the WASM file system as `inputName`. */
  inputPath?: string;
  inputName?: string;
  /** ffprobe the input (JSON of format and streams) instead of running ffmpeg. */
  probe?: boolean;
  /** ffmpeg arguments (without the program name). */
  args?: string[];
  /** File ffmpeg writes, read back as the output. */
  outputName?: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface WasmResult {
  code: number;
  log: string;
  output?: Uint8Array;
  probe?: string;
}

function corePaths(): { js: string; wasm: string } | null {
  try {
    const wasm = createRequire(import.meta.url).resolve('@ffmpeg/core/wasm'); // dist/umd/ffmpeg-core.wasm
    return { js: join(dirname(dirname(wasm)), 'esm', 'ffmpeg-core.js'), wasm: join(dirname(dirname(wasm)), 'esm', 'ffmpeg-core.wasm') };
  } catch {
    return null;
  }
}

// Runs inside the worker: plain JavaScript, no imports but node builtins and the core given by URL.
const WORKER = `
import { parentPort, workerData as d } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
globalThis.self = globalThis;
globalThis.location = { href: d.coreUrl };
try {
  const { default: createCore } = await import(d.coreUrl);
  const core = await createCore({ wasmBinary: readFileSync(d.wasmPath) });
  const lines = [];
  core.setLogger((l) => { if (lines.length < 5000) lines.push(l.message); });
  if (d.input) core.FS.writeFile(d.inputName, new Uint8Array(d.input));
  const out = { code: 0, log: '' };
  if (d.probe) {
    core.ffprobe('-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', d.inputName, '-o', '/probe.json');
    try { out.probe = new TextDecoder().decode(core.FS.readFile('/probe.json')); } catch { out.probe = undefined; }
  } else {
    out.code = core.exec(...d.args);
    if (d.outputName) { try { out.output = core.FS.readFile(d.outputName); } catch { out.output = undefined; } }
  }
  out.log = lines.join('\\n');
  parentPort.postMessage({ ok: true, value: out }, out.output ? [out.output.buffer] : []);
} catch (e) {
  parentPort.postMessage({ ok: false, error: String(e && e.message || e) });
}
`;

async function run(r: WasmRun): Promise<WasmResult> {
  const paths = corePaths();
  if (!paths) throw new Error('@ffmpeg/core is not installed');
  const input = r.inputPath ? await readFile(r.inputPath) : undefined;
  const buf = input ? (input.buffer.slice(input.byteOffset, input.byteOffset + input.byteLength) as ArrayBuffer) : undefined;
  return runInWorker<WasmResult>(WORKER, {
    coreUrl: pathToFileURL(paths.js).href,
    wasmPath: paths.wasm,
    input: buf,
    inputName: r.inputName ?? '/input',
    probe: r.probe ?? false,
    args: r.args ?? [],
    outputName: r.outputName,
  }, { timeoutMs: r.timeoutMs, signal: r.signal, transfer: buf ? [buf] : [] });
}

let availability: Promise<boolean> | undefined;

export const ffmpegWasm = Object.assign(run, {
  /** Whether the WASM build is installed here (checked once). */
  available(): Promise<boolean> {
    return (availability ??= (async () => {
      const p = corePaths();
      if (!p) return false;
      try {
        await Promise.all([access(p.js), access(p.wasm)]);
        return true;
      } catch {
        return false;
      }
    })());
  },
});
