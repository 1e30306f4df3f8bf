/**
 * Backend selection: which ONNX Runtime transformers.js runs on, and which execution providers to try.
 *
 * transformers.js binds its ONNX Runtime once, when its module is first evaluated (native onnxruntime-node,
 * or whatever sits at `globalThis[Symbol.for('onnxruntime')]`). So the runtime is a per-process choice made
 * here, before anything imports transformers.js; this module is the only one that imports it (dynamically).
 */
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { embeddedOrtWasmPath } from '../../runtime/embedded.ts';
import { probeWebGpu } from '../../runtime/gpu.ts';
import { graphOutputNames } from '../models/onnx-wire.ts';
import { DECODER_OPTION, type DecoderShape, rewriteDecoder, withoutDecoderOption } from './decoder-graph.ts';
import { type ExternalData, modelWithExternalData } from './external-data.ts';
import { nativeWebGpuFailure } from './native-webgpu.ts';
import { offThreadNativeSessions, offThreadOrt, providers } from './ort-thread.ts';
import { importOnnxruntimeNode } from './onnxruntime-node.ts';

export type BackendSetting = 'auto' | 'cpu' | 'wasm' | 'webgpu' | 'cuda';
/** What a session actually runs on. */
export type Device = 'cpu' | 'cuda' | 'webgpu' | 'wasm';
export type OrtPackage = 'onnxruntime-node' | 'onnxruntime-web';
export type Transformers = typeof import('@huggingface/transformers');

export interface BackendRuntime {
  requested: BackendSetting;
  ort: OrtPackage;
  tf: Transformers;
  /** Devices to try in order when a session is created; the first that loads wins. */
  devices: Device[];
  /** Intra-op threads per session (1 is fastest on small machines; 0 = runtime default). */
  threads: number;
  /** Why a preferred option was skipped, for logs and /api/ps. */
  notes: string[];
}

export interface BackendOptions {
  threads?: number;
  /** Directory (or URL prefix) holding onnxruntime-web's .wasm/.mjs files; default: the npm package's dist/. */
  wasmPaths?: string;
  /**
   * Which ONNX Runtime runs `webgpu` where both could (Deno, whose navigator.gpu serves onnxruntime-web):
   * by default onnxruntime-node's provider when it finds an adapter.
   */
  webGpuOrt?: OrtPackage;
}

const ORT_SYMBOL = Symbol.for('onnxruntime');
let current: Promise<BackendRuntime> | undefined;

/**
 * Initialise the process-wide backend. Later calls return the same runtime; asking for the other ONNX
 * Runtime package after one is bound throws (transformers.js cannot switch in-process).
 */
export function initBackend(requested: BackendSetting = 'auto', opts: BackendOptions = {}): Promise<BackendRuntime> {
  if (current) {
    return current.then((rt) => {
      if (rt.requested === requested) return rt;
      const conflict = rt.ort === 'onnxruntime-node'
        ? requested === 'wasm'
        : rt.requested === 'wasm' && (requested === 'cpu' || requested === 'cuda');
      if (conflict) throw new Error(`backend already bound to ${rt.ort} in this process; cannot switch to "${requested}"`);
      return { ...rt, requested, devices: devicesFor(requested, rt.ort) };
    });
  }
  current = bind(requested, opts);
  current.catch(() => (current = undefined));
  return current;
}

async function bind(requested: BackendSetting, opts: BackendOptions): Promise<BackendRuntime> {
  const threads = opts.threads ?? 1;
  const notes: string[] = [];
  const gpu = await probeWebGpu();
  // WebGPU asked for in a runtime with navigator.gpu (Deno): onnxruntime-node's own provider (Dawn) decodes
  // about 4× faster than onnxruntime-web on the same GPU (BENCHMARKS.md, "WebGPU on a real GPU"), so it is
  // taken where it finds an adapter of its own; where it finds none, onnxruntime-web runs on navigator.gpu's
  const webOnGpu = requested === 'webgpu' && gpu.api && gpu.adapter;
  if (requested !== 'wasm') {
    try {
      const native = await importOnnxruntimeNode() as unknown as OrtWeb; // fails where the native addon cannot load (compiled binary, odd libc, Deno without --allow-ffi)
      const dawn = !webOnGpu
        ? undefined
        : opts.webGpuOrt === 'onnxruntime-web'
        ? 'onnxruntime-web asked for'
        : await nativeWebGpuFailure(native).then((why) => why && firstLine(why));
      if (dawn) notes.push(`webgpu: not on onnxruntime-node's provider (${dawn}); using navigator.gpu (${gpu.description})`);
      else {
        // its `run` computes synchronously on the calling thread: CPU and WebGPU sessions go to the inference thread
        offThreadNativeSessions(native);
        const tf = await import('@huggingface/transformers');
        const devices = devicesFor(requested, 'onnxruntime-node');
        if (requested === 'auto' && gpu.adapter && !gpu.software) devices.unshift('webgpu');
        if (requested === 'auto' && gpu.software) notes.push(`auto: skipped software WebGPU adapter (${gpu.description})`);
        return { requested, ort: 'onnxruntime-node', tf, devices, threads, notes };
      }
    } catch (e) {
      notes.push(`onnxruntime-node unavailable (${firstLine(e)}); using onnxruntime-web`);
    }
  }
  const useWebGpu = requested === 'webgpu' || (requested === 'auto' && gpu.adapter && !gpu.software);
  const ort = configureOrtWeb(
    (useWebGpu ? await import('onnxruntime-web/webgpu') : await import('onnxruntime-web')) as unknown as OrtWeb,
    { threads, wasmPaths: opts.wasmPaths },
  );
  // WASM sessions compute on the thread that runs them: they live in a thread of their own so generation
  // does not block the event loop (./ort-thread.ts). onnxruntime-web fetch()es a model path outside Node
  // (Deno, the compiled binary): both ways hand it the bytes.
  (globalThis as Record<symbol, unknown>)[ORT_SYMBOL] = useWebGpu
    ? readingPaths(ort)
    : offThreadOrt(ort, { threads, wasmPaths: opts.wasmPaths });
  // transformers.js' Node build still require()s onnxruntime-node when evaluated (its web build cannot read
  // local files), so where the addon is absent a bundle must alias that module to a stub.
  const tf = await import('@huggingface/transformers').catch((e) => {
    throw new Error(
      `onnxruntime-web fallback: transformers.js failed to load (${
        firstLine(e)
      }); alias onnxruntime-node to a stub when bundling without it`,
    );
  });
  const devices: Device[] = useWebGpu && gpu.adapter ? ['webgpu', 'wasm'] : ['wasm'];
  if (requested === 'webgpu' && !gpu.adapter) notes.push(`webgpu: ${gpu.description}; falling back to wasm`);
  return { requested, ort: 'onnxruntime-web', tf, devices, threads, notes };
}

export type OrtWeb = typeof import('onnxruntime-web');

/**
 * onnxruntime-web's settings, the same on the server's thread and in the WASM inference thread: where its
 * .wasm is (embedded in the compiled binary: the bytes themselves), and its intra-op threads (WebAssembly
 * threads: a SharedArrayBuffer memory and one worker per extra thread; SIMD is always on in its build).
 */
export function configureOrtWeb(ort: OrtWeb, opts: { threads: number; wasmPaths?: string }): OrtWeb {
  // (A wasm-only wasmPaths also stops transformers.js from pointing ORT at a CDN for the glue: the bundle inlines it.)
  if (embeddedOrtWasmPath && !opts.wasmPaths) {
    ort.env.wasm.wasmBinary = readFileSync(embeddedOrtWasmPath);
    ort.env.wasm.wasmPaths = {};
  } else ort.env.wasm.wasmPaths = opts.wasmPaths ?? defaultWasmPaths();
  ort.env.wasm.numThreads = opts.threads || undefined;
  ort.env.wasm.proxy = false;
  return ort;
}

/**
 * onnxruntime-web on the WebGPU path: sessions created from bytes, since the browser bundle of onnxruntime-web
 * (the one a compiled binary carries) can only fetch() a string model path, and transformers.js passes paths
 * under Node-like runtimes. On the GPU a decoder also gets:
 * - its attention and rotary embeddings fused (./decoder-graph.ts), so a token takes fewer GPU dispatches;
 * - its KV cache kept on the GPU between steps (`present.*` outputs as GPU buffers), as transformers.js does in
 *   browsers. Here it cannot name the device (it knows no devices for an injected onnxruntime-web), so every
 *   layer's cache would otherwise be read back and written again at each token.
 */
function readingPaths(ort: typeof import('onnxruntime-web')): typeof import('onnxruntime-web') {
  const create = (model: string | Uint8Array, optsIn: { externalData?: ExternalData } & Record<string, unknown> = {}) => {
    const { graph, externalData } = modelWithExternalData(model, optsIn.externalData);
    const decoder = optsIn[DECODER_OPTION] as DecoderShape | undefined;
    const opts = withoutDecoderOption(optsIn);
    const onGpu = providers(opts).includes('webgpu');
    // its own decode loop is transformers.js' here: no outputs for the batch decoder
    const bytes = (onGpu && decoder && rewriteDecoder(graph, decoder, { newKeyValues: false })?.bytes) || graph;
    const cache = onGpu && !opts.preferredOutputLocation ? graphOutputNames(bytes).filter((n) => n.startsWith('present')) : [];
    const preferredOutputLocation = cache.length ? Object.fromEntries(cache.map((n) => [n, 'gpu-buffer'])) : opts.preferredOutputLocation;
    // deno-lint-ignore no-explicit-any
    return ort.InferenceSession.create(bytes, { ...opts, ...(externalData ? { externalData } : {}), preferredOutputLocation } as any);
  };
  return { ...ort, InferenceSession: { ...ort.InferenceSession, create } } as unknown as typeof import('onnxruntime-web');
}

function devicesFor(requested: BackendSetting, ort: OrtPackage): Device[] {
  if (ort === 'onnxruntime-web') return requested === 'webgpu' ? ['webgpu', 'wasm'] : ['wasm'];
  switch (requested) {
    case 'cuda':
      return ['cuda', 'cpu'];
    case 'webgpu':
      return ['webgpu', 'cpu'];
    default:
      return ['cpu'];
  }
}

function defaultWasmPaths(): string {
  const entry = import.meta.resolve('onnxruntime-web');
  const dir = new URL('./', entry);
  return dir.protocol === 'file:' ? fileURLToPath(dir) : dir.href;
}

/** transformers.js `from_pretrained` options that put a session on `device` under this runtime. */
export function sessionPlacement(rt: BackendRuntime, device: Device): { device: string; session_options: Record<string, unknown> } {
  const threadOpts = rt.threads > 0 ? { intraOpNumThreads: rt.threads, interOpNumThreads: 1 } : {};
  if (rt.ort === 'onnxruntime-web') {
    // transformers.js refuses device:'wasm' outside browsers; 'auto' + explicit providers does it
    return { device: 'auto', session_options: { ...threadOpts, executionProviders: [device] } };
  }
  return { device, session_options: threadOpts };
}

export const firstLine = (e: unknown): string => String((e as Error)?.message ?? e).split('\n')[0].slice(0, 300);
