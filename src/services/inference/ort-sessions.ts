/**
 * The thread side of ONNX Runtime sessions run off the event loop (./ort-thread.ts is the other side). A
 * session computes on the thread that calls `run` (onnxruntime-web always; onnxruntime-node's `run` too,
 * synchronously), so the sessions live here, in a thread of their own, and the server's thread only sends
 * inputs and receives outputs. Registered as worker operations; the sessions stay in this module between
 * calls, so they are used from one dedicated thread only.
 */
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { OpContext } from '../workers/serve-operations.ts';
import { configureOrtWeb, type OrtPackage, type OrtWeb } from './backend.ts';
import { DECODER_OPTION, type DecoderShape, rewriteDecoder, withoutDecoderOption } from './decoder-graph.ts';
import { PRESENT_SWITCH } from './past-and-new.ts';
import { type ExternalData, modelWithExternalData } from './external-data.ts';
import { withInt8Activations } from './nbits-accuracy.ts';
import { type ExternalReader, withSignedWeights, withUnsignedWeights } from './int8-weights.ts';
import { withInt8Embeddings } from './q4-embeddings.ts';
import { hasVnni, int8ProductsSaturate } from '../../runtime/cpu.ts';
import { collectGarbage } from '../../runtime/gc.ts';
import { providers } from './ort-thread.ts';
import { externalFilesOf } from '../models/onnx-wire.ts';
import { externalBytes, graphOfBytes, graphOfFile } from '../models/onnx-file.ts';
import { nbitsToInt8 } from './wasm-q4.ts';
import { importOnnxruntimeNode } from './onnxruntime-node.ts';
import { cutLmHead, headProduct, type LmHead, LOGITS } from './lm-head.ts';
import { type NativeKernels, nativeKernels } from '../../runtime/kernels.ts';
import { wasmKernels } from '../../runtime/wasm-kernels.ts';
import { splitAtWeights, type SplitGraph } from './weight-split.ts';
import { SplitSession } from './split-session.ts';
import { argmax, drawWith, newScratch, type SamplerState } from './sampling.ts';
import type { Tensor } from '../models/onnx-wire.ts';

/** A tensor as it crosses threads: its buffer moves (or is copied), the rest is plain data. */
export interface WireTensor {
  type: string;
  dims: number[];
  data: ArrayBufferView;
}

/**
 * An output a run left on the GPU (a WebGPU session's KV cache: `preferredOutputLocation` 'gpu-buffer'). The
 * tensor stays in this thread, where its device is; only its id crosses, to be fed to a later run or dropped.
 */
export interface GpuTensor {
  type: string;
  dims: number[];
  gpu: number;
}

/**
 * A float32 view of a buffer held in this thread between calls (a decode loop's KV cache): `length`
 * floats from element `offset` of held buffer `held`.
 */
export interface HeldView {
  held: number;
  offset: number;
  length: number;
  dims: number[];
}

/** One copy between held buffers: `length` floats from element `fromOffset` of one to element `toOffset` of another. */
export interface HeldCopy {
  from: number;
  fromOffset: number;
  length: number;
  to: number;
  toOffset: number;
}

/**
 * Where a call's new cache positions go: an output [rows, heads, q, d] written into a held cache laid out
 * [rows, heads, stride, d], at positions `at`..`at + q` of every row and head.
 */
export interface HeldAppend {
  held: number;
  stride: number;
  at: number;
}

export interface OrtThreadInit {
  /** The process's ONNX Runtime (./backend.ts binds one per process): the thread loads the same package. */
  runtime: OrtPackage;
  /** onnxruntime-web's threads (native sessions take theirs from their session options). */
  threads: number;
  wasmPaths?: string;
  /**
   * Only decoders cut for svc's WASM kernels are made here (./ort-thread.ts gives them a thread whose
   * onnxruntime-web has one thread): `create` answers null for any other model, made nothing of.
   */
  splitOnly?: boolean;
}

/** What the server's thread needs of a session to stand in for it. */
/** What the graph edits made where a session is created did, counted. */
export interface GraphEditCounts {
  /** MatMulNBits weights run as int8 MatMulInteger (WASM: ./wasm-q4.ts). */
  int8From4Bit: number;
  /** MatMulNBits nodes given int8 activation kernels (native CPU: ./nbits-accuracy.ts). */
  int8Activations: number;
  /** MatMulInteger weights moved between uint8 and int8 (native x64 CPU: int8 with VNNI, uint8 without; ./int8-weights.ts). */
  signedWeights: number;
  /** A q4 graph's fp32 embedding tables held as int8 (WASM: ./q4-embeddings.ts). */
  int8Embeddings: number;
  /** Attention MatMuls that read unrepeated KV heads (./grouped-attention.ts). */
  groupedAttention: number;
  /** `new_key_values.*` outputs added (./new-key-values.ts). */
  newKeyValues: number;
  /** Rotations made one RotaryEmbedding node (./rotary-embedding.ts). */
  rotaryEmbeddings: number;
  /** Layers whose attention reads the past and new positions apart, the whole cache on demand (./past-and-new.ts). */
  pastAndNew: number;
  /**
   * Inline weights ONNX Runtime reads as external data rather than from the graph (../models/onnx-file.ts):
   * natively from the model's file, on WASM from the model's bytes.
   */
  weightsInFile: number;
  /** 1 where the LM head (4- or 8-bit) runs on svc's own kernel (./lm-head.ts, ./weight-split.ts). */
  lmHeadOwnKernel: number;
  /** Layers whose MLP (4- or 8-bit) runs on svc's own kernel (./weight-split.ts). */
  mlpsOwnKernel: number;
}

export interface SessionInfo {
  id: number;
  inputNames: string[];
  outputNames: string[];
  inputMetadata: unknown[];
  outputMetadata: unknown[];
  /** What the graph edits made where the session was created did, counted. */
  edits: GraphEditCounts;
}

type Session = Awaited<ReturnType<OrtWeb['InferenceSession']['create']>>;

let ort: Promise<OrtWeb> | undefined;
/** The package the thread's sessions run on (one per process). */
let runtimeOfSessions: OrtPackage | undefined;
const sessions = new Map<number, Session>();
/** Sessions whose graph computes `present.*` only when asked (./past-and-new.ts): calls set PRESENT_SWITCH. */
const presentOnDemand = new Set<number>();
/** Sessions whose LM head runs on svc's own kernel (./lm-head.ts): the graph outputs `input` in place of `logits`. */
interface Head {
  input: string;
  k: number;
  n: number;
  multiply: ReturnType<typeof headProduct>;
}
const heads = new Map<number, Head>();
/**
 * A split session's last new keys and values, by session and output, handed to its next run to write into: they
 * are copied into the held cache as soon as a run ends, and a decode step made ~50 such small buffers (2 µs each
 * and garbage for the thread's collector) where its shapes repeat. A run of other shapes makes its own.
 */
const appended = new Map<number, Map<string, OrtTensor>>();
let nextId = 1;
/**
 * Float32 buffers kept here between calls, by id (given by the server's thread), with the session they
 * serve: a decode loop's KV cache stays in this thread, so a step moves no buffer between threads. Moving
 * them (even without copying) made each isolate count their size as new external memory at every step,
 * and V8 answered with a full collection per step on both sides.
 */
const held = new Map<number, { session: number; data: Float32Array; scratch?: Float32Array }>();
type OrtTensor = InstanceType<OrtWeb['Tensor']>;
/** Outputs left on the GPU, by id (see `GpuTensor`), with the session that made them. */
const onGpu = new Map<number, { session: number; tensor: OrtTensor }>();
let nextGpu = 1;

function runtime(init: OrtThreadInit): Promise<OrtWeb> {
  runtimeOfSessions ??= init.runtime;
  // onnxruntime-node has the same session and tensor API (both are onnxruntime-common's)
  return ort ??= init.runtime === 'onnxruntime-node'
    ? importOnnxruntimeNode() as unknown as Promise<OrtWeb>
    : import('onnxruntime-web').then((m) => configureOrtWeb(m as unknown as OrtWeb, init));
}

/** The name a WASM model's own weights are handed over as (a data file made of the model's bytes). */
const INLINE_WEIGHTS = 'svc-inline-weights.bin';

/** The graph edits made where a session is created, for its SessionInfo. */
interface Edits {
  int8?: ReturnType<typeof nbitsToInt8>;
  rewritten?: ReturnType<typeof rewriteDecoder>;
  activations?: ReturnType<typeof withInt8Activations>;
  signed?: { weights: number; bytes?: Uint8Array };
  embeddings?: ReturnType<typeof withInt8Embeddings>;
  /** Inline weights handed to ONNX Runtime as external data (the model's file, or on WASM its bytes). */
  inFile?: number;
  /** The LM head taken out of the graph, run on svc's own kernel (./lm-head.ts). */
  lmHead?: LmHead;
  /** The graph cut around its weight products (4- or 8-bit), run on svc's own kernels (./weight-split.ts). */
  split?: SplitGraph;
}

/**
 * onnxruntime-node: the graph to load (undefined: the model's path, as it is), the folder its external data
 * is read from, and the edits. With a model path, only the file's graph is read, its weights pointed at where
 * they lie in it (../models/onnx-file.ts); edited or not, that graph is what ONNX Runtime loads when it
 * points at any: ONNX Runtime then reads the weights from the file itself, and holds less than when it
 * parses them inline (BENCHMARKS.md, "4-bit files from the hub: memory").
 */
function nativeGraph(
  model: string | Uint8Array,
  options: Record<string, unknown>,
  decoder: DecoderShape | undefined,
): { edited?: Uint8Array; folder?: string; edits: Edits } {
  // ONNX Runtime refuses external data whose real path leaves the model's folder, so a symlinked model (a
  // mirrored work directory) is pointed at where it really is
  const file = typeof model === 'string' ? realpathSync(model) : undefined;
  const onCpu = providers(options).every((e) => e === 'cpu');
  const read = file ? graphOfFile(file) : { bytes: model as Uint8Array, pointed: 0 };
  if (!read) return { edits: {} };
  const graph = read.bytes;
  const edits: Edits = {};
  // uint8 weights made int8 where that is exact and faster: x64 with VNNI (./int8-weights.ts)
  const external = file ? (t: Tensor) => externalBytes(file, t) : undefined;
  edits.signed = onCpu && hasVnni() ? withSignedWeights(graph, external) : undefined;
  const source = edits.signed?.bytes ?? graph;
  if (decoder) edits.rewritten = rewriteDecoder(source, decoder, { pastAndNew: onCpu });
  if (onCpu) edits.activations = withInt8Activations(edits.rewritten?.bytes ?? source);
  const before = edits.activations?.bytes ?? edits.rewritten?.bytes ?? edits.signed?.bytes;
  const own = decoder && onCpu && ['avx512vnni', 'avx2'].includes(nativeKernels()?.path ?? '');
  // int8 weights made uint8 where ONNX Runtime's int8 products saturate: x64 without VNNI (./int8-weights.ts).
  // Only those ONNX Runtime runs, after the cuts below: the kernels take int8 weights as the file holds them.
  const unsigned = onCpu && int8ProductsSaturate();
  const folder = file && dirname(file);
  // the weight products, 4- or 8-bit (and the sums and norms between them), on svc's own kernels
  // (./weight-split.ts), on the session's threads (a number of them: left to ONNX Runtime, it takes every core)
  edits.split = own && Number(options.intraOpNumThreads) >= 1 ? splitAtWeights(before ?? graph, external) : undefined;
  if (edits.split) {
    if (unsigned) edits.signed = withUnsignedStages(edits.split, external);
    edits.inFile = read.pointed;
    return { edits, folder };
  }
  // else the LM head alone, where it is faster than ONNX Runtime's (./lm-head.ts)
  const cut = own ? cutLmHead(before ?? graph, external) : undefined;
  edits.lmHead = cut?.head;
  const last = cut?.bytes ?? before;
  if (unsigned) edits.signed = withUnsignedWeights(last ?? graph, external);
  const edited = (unsigned ? edits.signed?.bytes : undefined) ?? last ?? (read.pointed ? graph : undefined);
  edits.inFile = edited ? read.pointed : 0;
  // if the other data files are not beside it, the model loads as it is
  if (edited && folder && externalFilesOf(edited).some((f) => !existsSync(join(folder, f)))) return { edits: {} };
  return { edited, folder, edits };
}

/** The split's graph stages with their int8 `MatMulInteger` weights made uint8 (in place), and how many were. */
function withUnsignedStages(split: SplitGraph, external: ExternalReader | undefined): { weights: number } | undefined {
  let weights = 0;
  for (const stage of split.stages) {
    if (stage.kind !== 'graph') continue;
    const made = withUnsignedWeights(stage.model, external);
    if (made) (stage.model = made.bytes), (weights += made.weights);
  }
  return weights ? { weights } : undefined;
}

/**
 * onnxruntime-web: the graph to load (bytes) and the edits. On WASM a decoder whose products svc's WASM kernels
 * can run is cut around them as natively (`edits.split`; its 4-bit weights kept), else its 4-bit weights become
 * int8 for ONNX Runtime's WASM kernel.
 */
function webGraph(graph: Uint8Array, decoder: DecoderShape | undefined, onWasm: boolean): { data: Uint8Array; edits: Edits } {
  const edits: Edits = {};
  // WASM holds every weight in its own memory (natively, ONNX Runtime maps the file and touches only the rows
  // a prompt reads)
  edits.embeddings = withInt8Embeddings(graph);
  if (decoder && onWasm && wasmKernels()) {
    const rewritten = rewriteDecoder(edits.embeddings?.bytes ?? graph, decoder, { pastAndNew: true });
    const before = rewritten?.bytes ?? edits.embeddings?.bytes ?? graph;
    const leveled = withInt8Activations(before);
    edits.split = splitAtWeights(leveled?.bytes ?? before);
    if (edits.split) {
      edits.rewritten = rewritten;
      edits.activations = leveled;
      return { data: before, edits };
    }
  }
  // 4-bit weights run as int8 here: ONNX Runtime's WASM build has no 4-bit kernel (./wasm-q4.ts)
  edits.int8 = nbitsToInt8(edits.embeddings?.bytes ?? graph);
  const before = edits.int8?.bytes ?? edits.embeddings?.bytes ?? graph;
  if (decoder) edits.rewritten = rewriteDecoder(before, decoder, { pastAndNew: onWasm });
  return { data: edits.rewritten?.bytes ?? before, edits };
}

async function create(
  [init, model, optionsIn]: [OrtThreadInit, string | Uint8Array, Record<string, unknown> & { externalData?: ExternalData }],
  _ctx?: OpContext,
): Promise<SessionInfo | null> {
  const o = await runtime(init);
  const decoder = optionsIn[DECODER_OPTION] as DecoderShape | undefined;
  const options = withoutDecoderOption(optionsIn);
  let session: Session;
  let edits: Edits;
  if (init.runtime === 'onnxruntime-node') {
    const native = nativeGraph(model, options, decoder);
    edits = native.edits;
    const extra = (options.extra ?? {}) as { session?: Record<string, unknown> };
    const config = {
      ...extra.session,
      ...(native.folder && (native.edited || edits.split) ? { model_external_initializers_file_folder_path: native.folder } : {}),
      // the head's kernel runs right after each call: ONNX Runtime's threads stop spinning then, leaving it the cores
      ...(edits.lmHead ? { force_spinning_stop: '1' } : {}),
    };
    const from = Object.keys(config).length ? { ...options, extra: { ...extra, session: config } } : options;
    // the native runtime reads a model path (and its external data beside it) itself
    session = edits.split
      ? await SplitSession.create(o, nativeKernels()!, edits.split, from, true, true) as unknown as Session
      : await o.InferenceSession.create((native.edited ?? model) as never, from as never);
  } else {
    const { graph, externalData } = modelWithExternalData(model, options.externalData);
    const onWasm = providers(options).every((e) => e === 'wasm' || e === 'cpu');
    const web = webGraph(graph, decoder, onWasm);
    edits = web.edits;
    if (init.splitOnly && !edits.split) return null;
    if (edits.split) {
      // the stages on onnxruntime-web, the products on svc's WASM kernels (on the session's threads)
      session = await SplitSession.create(o, wasmKernels()!, edits.split, options, false, true) as unknown as Session;
    } else {
      // the weights handed over as a data file in the same bytes, copied once into onnxruntime-web's memory
      const split = graphOfBytes(web.data, INLINE_WEIGHTS);
      const files = [...(externalData ?? []), ...(split?.pointed ? [{ path: INLINE_WEIGHTS, data: web.data }] : [])];
      edits.inFile = split?.pointed ?? 0;
      session = await o.InferenceSession.create(split?.pointed ? split.bytes : web.data, {
        ...options,
        ...(files.length ? { externalData: files } : {}),
      } as never);
    }
  }
  // the model's bytes and the graphs made from them are garbage now: freed before the thread goes idle
  collectGarbage();
  const id = nextId++;
  sessions.set(id, session);
  if (edits.split && init.runtime === 'onnxruntime-web') keptIn.set(id, wasmKernels()!);
  if (edits.rewritten?.pastAndNew) presentOnDemand.add(id);
  const head = edits.lmHead;
  if (head) {
    const multiply = headProduct(head, nativeKernels()!, Number(options.intraOpNumThreads) || 1);
    heads.set(id, { input: head.input, k: head.k, n: head.n, multiply });
  }
  // callers see `logits` where the graph outputs the head's input
  const named = (n: string) => (head && n === head.input ? LOGITS : n);
  const s = session as unknown as { inputMetadata?: unknown[]; outputMetadata?: { name?: string }[] };
  return {
    id,
    inputNames: session.inputNames.filter((n) => n !== PRESENT_SWITCH),
    outputNames: session.outputNames.map(named),
    inputMetadata: [...(s.inputMetadata ?? [])],
    outputMetadata: (s.outputMetadata ?? []).map((m) => (m?.name ? { ...m, name: named(m.name) } : m)),
    edits: {
      int8From4Bit: edits.int8?.converted ?? 0,
      int8Activations: edits.activations?.nodes ?? 0,
      signedWeights: edits.signed?.weights ?? 0,
      int8Embeddings: edits.embeddings?.tables ?? 0,
      groupedAttention: edits.rewritten?.grouped ?? 0,
      newKeyValues: edits.rewritten?.newKeyValues ?? 0,
      rotaryEmbeddings: edits.rewritten?.rotary ?? 0,
      pastAndNew: edits.rewritten?.pastAndNew ?? 0,
      weightsInFile: edits.inFile ?? 0,
      lmHeadOwnKernel: head || edits.split?.stages.some((x) => x.kind === 'kernels' && x.calls.some((c) => c.kind === 'product')) ? 1 : 0,
      mlpsOwnKernel:
        edits.split?.stages.reduce((n, x) => n + (x.kind === 'kernels' ? x.calls.filter((c) => c.kind === 'mlp').length : 0), 0) ?? 0,
    },
  };
}

function sessionOf(id: number): Session {
  const session = sessions.get(id);
  if (!session) throw new Error(`session ${id} is gone (its inference thread was restarted): load the model again`);
  return session;
}

async function run([id, feeds]: [number, Record<string, WireTensor | GpuTensor>]): Promise<Record<string, WireTensor | GpuTensor>> {
  const session = sessionOf(id);
  const o = await ort!;
  const inputs: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(feeds)) {
    inputs[name] = 'gpu' in t ? gpuOf(t.gpu) : new o.Tensor(t.type as never, t.data as never, t.dims);
  }
  // every output is fetched, the whole cache too
  if (presentOnDemand.has(id)) inputs[PRESENT_SWITCH] = new o.Tensor('bool', [true], []);
  const out = await session.run(inputs as never);
  const result: Record<string, WireTensor | GpuTensor> = {};
  const head = heads.get(id);
  for (const [name, t] of Object.entries(out)) {
    if (head && name === head.input) {
      result[LOGITS] = { type: 'float32', dims: [...t.dims.slice(0, -1), head.n], data: headLogits(head, t.data as Float32Array) };
      continue;
    }
    if (t.location === 'gpu-buffer') {
      const gpu = nextGpu++;
      onGpu.set(gpu, { session: id, tensor: t });
      result[name] = { type: t.type, dims: [...t.dims], gpu };
      continue;
    }
    result[name] = { type: t.type, dims: [...t.dims], data: t.data as ArrayBufferView };
    t.dispose?.();
  }
  return result;
}

function gpuOf(id: number): OrtTensor {
  const t = onGpu.get(id)?.tensor;
  if (!t) throw new Error(`GPU tensor ${id} is gone (disposed, its session released or its thread restarted)`);
  return t;
}

/** Frees outputs left on the GPU. */
function dropGpu([ids]: [number[]]): void {
  for (const id of ids) {
    onGpu.get(id)?.tensor.dispose();
    onGpu.delete(id);
  }
}

function heldOf(id: number): Float32Array {
  const h = held.get(id);
  if (!h) throw new Error(`held buffer ${id} is gone (its session was released or its thread restarted)`);
  return h.data;
}

/**
 * The kernels of WASM sessions cut for svc's kernels, by session: their held buffers (the KV cache) are made in
 * the kernels' memory, where each decode step's attention reads them without copying them in (at a 2,000-token
 * context, ~46 MB a step for a 0.5B model's 24 layers).
 */
const keptIn = new Map<number, NativeKernels>();

/** New held buffers (zeroed) for a session's calls, with the ids the server's thread chose. */
function hold([session, ids, lengths]: [number, number[], number[]]): void {
  sessionOf(session);
  const kernels = keptIn.get(session);
  ids.forEach((id, i) => held.set(id, { session, data: kernels?.floats?.(lengths[i]!) ?? new Float32Array(lengths[i]!) }));
}

/** Forgets a held buffer, freeing it where the kernels made it. */
function forget(id: number): void {
  const h = held.get(id);
  if (h) keptIn.get(h.session)?.freeFloats?.(h.data);
  held.delete(id);
}

/**
 * A held buffer the server's thread reads too (a SharedArrayBuffer it made: the logits of a decode step),
 * so what a run writes there reaches it without a buffer crossing threads at every step. ONNX Runtime
 * cannot write into shared memory, so a run writes into a private twin and the result is copied over; svc's
 * kernels can, so a split session whose kernel call makes the output writes it in place (a 4-row decode step's
 * logits: 2.4 MB not copied).
 */
function share([session, id, buffer]: [number, number, SharedArrayBuffer]): void {
  sessionOf(session);
  const data = new Float32Array(buffer);
  held.set(id, { session, data, scratch: new Float32Array(data.length) });
}

function drop([ids]: [number[]]): void {
  for (const id of ids) forget(id);
}

/**
 * A run reading float32 feeds from held buffers and writing outputs into them: `fetches` in place (on
 * native sessions; copied in here on WASM, whose runtime leaves preallocated outputs unwritten), `appends`
 * copied into a cache at given positions. `returned` outputs go back as usual (by default every other
 * output); outputs in none of the three are not fetched at all.
 */
async function runHeld(
  [id, feeds, fetches, appends = {}, returned]: [
    number,
    Record<string, WireTensor | HeldView>,
    Record<string, HeldView>,
    Record<string, HeldAppend>?,
    string[]?,
  ],
): Promise<Record<string, WireTensor>> {
  const session = sessionOf(id);
  const o = await ort!;
  const view = (t: HeldView) => new o.Tensor('float32', heldOf(t.held).subarray(t.offset, t.offset + t.length), t.dims);
  const inputs: Record<string, unknown> = {};
  for (const [name, t] of Object.entries(feeds)) {
    inputs[name] = 'held' in t ? view(t) : new o.Tensor(t.type as never, t.data as never, t.dims);
  }
  // the outputs fetched: those without a held buffer (null) are allocated by ONNX Runtime
  const head = heads.get(id);
  const asked = returned ? [...Object.keys(fetches), ...Object.keys(appends), ...returned] : session.outputNames;
  const names = head ? asked.map((n) => (n === LOGITS ? head.input : n)) : asked;
  if (presentOnDemand.has(id)) inputs[PRESENT_SWITCH] = new o.Tensor('bool', [names.some((n) => n.startsWith('present.'))], []);
  // onnxruntime-node's sessions write into the outputs handed them, and so does a split session on either
  // (onnxruntime-web's leave them unwritten: theirs are copied in below, as is an output a split session did
  // not write where it was handed)
  const split = session instanceof SplitSession;
  const writes = runtimeOfSessions === 'onnxruntime-node' || split;
  const into: Record<string, InstanceType<OrtWeb['Tensor']> | null> = {};
  const last = split ? appended.get(id) ?? appended.set(id, new Map()).get(id)! : undefined;
  // new positions [rows, heads, q, d]: the last run's, where this one has as many rows and positions
  const [rows, q] = (inputs.input_ids as OrtTensor | undefined)?.dims ?? [];
  const again = (t: OrtTensor | undefined) => (t?.dims[0] === rows && t?.dims[2] === q ? t : null);
  // a held buffer in shared memory is written through its private twin, unless a kernel call makes the output
  const twin = (name: string) => !(split && session.writesOwn(name)) && held.get(fetches[name]!.held)?.scratch;
  for (const name of names) {
    const f = fetches[name];
    const scratch = f && twin(name);
    into[name] = writes && f
      ? (scratch ? new o.Tensor('float32', scratch.subarray(0, f.length), f.dims) : view(f))
      : name in appends
      ? again(last?.get(name))
      : null;
  }
  const out = await session.run(inputs as never, into as never);
  const outputs: Record<string, WireTensor> = {};
  for (const [name, t] of Object.entries(out)) {
    if (head && name === head.input) {
      // the kernel writes into shared memory itself (ONNX Runtime needs the private twin, above)
      const f = fetches[LOGITS];
      const logits = headLogits(head, t.data as Float32Array, f && heldOf(f.held).subarray(f.offset, f.offset + f.length));
      if (!f) outputs[LOGITS] = { type: 'float32', dims: [...t.dims.slice(0, -1), head.n], data: logits };
      continue;
    }
    if (name in fetches) {
      const f = fetches[name]!;
      if (!writes || twin(name) || (split && t !== into[name])) {
        heldOf(f.held).set((t.data as Float32Array).subarray(0, f.length), f.offset);
      }
    } else if (name in appends) {
      append(appends[name]!, t.data as Float32Array, t.dims);
      last?.set(name, t);
    } else outputs[name] = { type: t.type, dims: [...t.dims], data: t.data as ArrayBufferView };
  }
  return outputs;
}

/**
 * Decode steps run back to back in this thread, for a batch whose cache is held in place (the batch
 * decoder's in-place layout: each row's past at a fixed capacity `stride`, its positions from `pads[r]` to
 * `len` valid, a new position's keys and values written in at its length). Each step feeds the tokens the
 * last one chose (never one of the row's `suppress`; drawn by the row's sampler where it has one, else the
 * most likely), so a run of `steps` costs one exchange with the caller instead of one a token: each exchange
 * made the server's thread wake and the inference thread wait for it. Returns the tokens, step by step, row
 * by row (fewer steps where `interrupt` was set), and each sampler as its draws left it.
 */
export interface DecodePlan {
  tokens: number[];
  pads: number[];
  len: number;
  stride: number;
  steps: number;
  /** Each past input's held cache [rows, kvHeads, stride, headDim], and the output whose new positions go into it. */
  past: { name: string; held: number; dims: number[]; output: string }[];
  /** Shared memory the logits [rows, 1, vocab] are written into. */
  logits: HeldView;
  keepLast: boolean;
  suppress: number[][];
  /** Each row's sampler (its settings and generator state), or null for the most likely token. */
  samplers?: (SamplerState | null)[];
  /** Set (to non-zero) by the caller when it needs the thread back early: a request waits, a row is cancelled. */
  interrupt?: Int32Array;
}

export interface DecodedHeld {
  tokens: Int32Array;
  samplers: (SamplerState | null)[];
}

/**
 * The draws' buffers (a few MB with a 152k vocabulary), kept for every call: each draw runs to its end
 * without awaiting, so one serves every row of every call in turn.
 */
const drawScratch = newScratch();

async function decodeHeld([id, plan]: [number, DecodePlan]): Promise<DecodedHeld> {
  const { pads, stride, steps, suppress } = plan;
  const b = pads.length;
  const chosen = new Int32Array(steps * b);
  const samplers = plan.samplers ?? pads.map(() => null);
  let tokens = plan.tokens;
  const i64 = (values: number[], dims: number[]): WireTensor => ({ type: 'int64', dims, data: BigInt64Array.from(values, BigInt) });
  const feeds: Record<string, WireTensor | HeldView> = {};
  for (const p of plan.past) feeds[p.name] = { held: p.held, offset: 0, length: p.dims.reduce((x, y) => x * y, 1), dims: p.dims };
  if (plan.keepLast) feeds.num_logits_to_keep = i64([1], []);
  const vocab = plan.logits.dims.at(-1)!;
  // the most likely token by the native kernel where the sessions are native (~10x faster than a script's loop
  // over a 152k vocabulary); onnxruntime-web's path stays free of the addon
  const greedy = (runtimeOfSessions === 'onnxruntime-node' && nativeKernels()?.argmax) || argmax;
  for (let k = 0; k < steps; k++) {
    const len = plan.len + k;
    const mask = new BigInt64Array(b * (stride + 1));
    for (let r = 0; r < b; r++) {
      mask.fill(1n, r * (stride + 1) + pads[r]!, r * (stride + 1) + len).fill(1n, r * (stride + 1) + stride, (r + 1) * (stride + 1));
    }
    feeds.input_ids = i64(tokens, [b, 1]);
    feeds.position_ids = i64(pads.map((pad) => len - pad), [b, 1]);
    feeds.attention_mask = { type: 'int64', dims: [b, stride + 1], data: mask };
    const appends: Record<string, HeldAppend> = {};
    for (const p of plan.past) appends[p.output] = { held: p.held, stride, at: len };
    await runHeld([id, feeds, { [LOGITS]: plan.logits }, appends, []]);
    const logits = heldOf(plan.logits.held);
    tokens = pads.map((_, r) => {
      const row = logits.subarray(plan.logits.offset + r * vocab, plan.logits.offset + (r + 1) * vocab);
      for (const t of suppress[r] ?? []) row[t] = -Infinity;
      const sampler = samplers[r];
      return sampler ? drawWith(row, sampler, drawScratch) : greedy(row);
    });
    chosen.set(tokens, k * b);
    // the steps so far, where the caller asked for the thread back
    if (plan.interrupt && Atomics.load(plan.interrupt, 0)) return { tokens: chosen.slice(0, (k + 1) * b), samplers };
  }
  return { tokens: chosen, samplers };
}

/** The logits of a session whose LM head runs on svc's kernel, from the hidden states its graph output. */
function headLogits(h: Head, hidden: Float32Array, into?: Float32Array): Float32Array {
  const m = hidden.length / h.k;
  const y = into ?? new Float32Array(m * h.n);
  h.multiply(hidden, m, y);
  return y;
}

/** New positions [rows, heads, q, d] written into a held cache at `a.at` of every row and head. */
function append(a: HeldAppend, data: Float32Array, dims: readonly number[]): void {
  const [rows, heads, q, d] = dims as [number, number, number, number];
  const cache = heldOf(a.held);
  if (a.at + q > a.stride || rows * heads * a.stride * d > cache.length) {
    throw new Error(`new positions ${a.at}..${a.at + q} do not fit a cache of ${a.stride} positions per row`);
  }
  for (let i = 0; i < rows * heads; i++) cache.set(data.subarray(i * q * d, (i + 1) * q * d), (i * a.stride + a.at) * d);
}

/** Copies between held buffers (a decode loop repacking or growing its cache), done here. */
function copyHeld([moves]: [HeldCopy[]]): void {
  for (const m of moves) heldOf(m.to).set(heldOf(m.from).subarray(m.fromOffset, m.fromOffset + m.length), m.toOffset);
}

async function release([id]: [number]): Promise<void> {
  const session = sessions.get(id);
  sessions.delete(id);
  presentOnDemand.delete(id);
  heads.delete(id);
  appended.delete(id);
  for (const [h, { session: of }] of held) if (of === id) forget(h);
  keptIn.delete(id);
  dropGpu([[...onGpu].filter(([, g]) => g.session === id).map(([g]) => g)]);
  await session?.release();
}

export const ortSessionOperations = {
  'ort.create': create,
  'ort.run': run,
  'ort.hold': hold,
  'ort.share': share,
  'ort.drop': drop,
  'ort.runHeld': runHeld,
  'ort.decodeHeld': decodeHeld,
  'ort.copyHeld': copyHeld,
  'ort.dropGpu': dropGpu,
  'ort.release': release,
};
