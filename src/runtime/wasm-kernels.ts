/**
 * svc's own kernels compiled to WebAssembly (native/kernels/wasm.c, built into native/kernels/svc_kernels.wasm
 * and svc_kernels_relaxed.wasm by scripts/build-wasm-kernels.mjs): the operations of `NativeKernels`
 * (./kernels.ts) for the WASM backend, in a memory of their own. Weights are packed into that memory once; each
 * call copies its inputs in and its outputs out (a decode step's vectors: a few KB). The modules import only
 * their memory, which is shared: a call on more than one thread splits its work with worker threads, each an
 * instance of the same module over that memory (native/kernels/wasm-pool.c), started when a call first asks
 * for them and kept (unreferenced: they never keep the process alive). The relaxed-SIMD module (its 4-bit
 * products faster) is taken where the engine has relaxed SIMD: Deno and Bun do, Node from 21, and Node 20 behind
 * V8's flag, which is set here. Its 4-bit dot products take the form the engine runs best and right (`load`),
 * checked at load.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { embeddedAssets } from './embedded.ts';
import { setFlagsFromString } from 'node:v8';
import { envVars, runtimeName } from './env.ts';
import type { AttentionArrays, AttentionShape, MlpCall, NativeKernels, PackedQ4, PackedQ8 } from './kernels.ts';

interface Exports {
  __stack_pointer: WebAssembly.Global;
  svc_alloc(bytes: number): number;
  svc_free(ptr: number): void;
  svc_new_q8(scales: number, k: number, n: number): number;
  svc_pack_q8_rows(w: number, b: number, c: number, zp: number): void;
  svc_free_q8(w: number): void;
  svc_matmul_q8(w: number, x: number, m: number, y: number, threads: number, sets: number): number;
  svc_pack_q4(b: number, scales: number, k: number, n: number): number;
  svc_free_q4(w: number): void;
  svc_matmul_q4(w: number, x: number, m: number, y: number, threads: number): number;
  svc_mlp_q8(gate: number, up: number, down: number, x: number, m: number, y: number, threads: number, sets: number): number;
  svc_mlp_q4(gate: number, up: number, down: number, x: number, m: number, y: number, threads: number): number;
  svc_rms_norm(x: number, w: number, n: number, rows: number, eps: number, y: number): void;
  svc_add_into(a: number, b: number, alen: number, blen: number, y: number): void;
  svc_attention(a: number, threads: number): number;
  svc_attention_size(): number;
  svc_worker(id: number): void;
  svc_rest(): void;
  svc_worker_parts(): number;
  svc_q4_dot_pairs(on: number): number;
}

/**
 * The WASM kernels, how the relaxed build takes its 4-bit dot products (undefined for the 128-bit build), how
 * many parts of calls their workers have run and the size of their memory (for tests).
 */
export type WasmKernels = NativeKernels & { dot?: Q4Dot; workerParts(): number; memoryBytes(): number };

/** The memory a module imports, in pages of 64 KiB: as scripts/build-wasm-kernels.mjs links it. */
const MEMORY_PAGES = 16;
const MAX_MEMORY_PAGES = 65535;
/** Workers at most (a call on more threads runs on this many and the caller), and each one's stack. */
const MAX_WORKERS = 15;
const WORKER_STACK = 256 * 1024;

/** A worker: an instance of the module over the caller's memory, on a stack of its own, in the pool forever. */
const WORKER = `import { workerData } from 'node:worker_threads';
const { bytes, memory, id, stack } = workerData;
const e = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports;
e.__stack_pointer.value = stack;
e.svc_worker(id);`;

let workerFailures = 0;
/** Said once a process: later failures are the same one. */
function workerFailed(err: Error): void {
  if (workerFailures++ === 0) console.error(`svc: a WASM kernel worker failed (${err.message}); the kernels go on with fewer threads`);
}

/** The two builds of native/kernels/wasm.c. */
export type WasmKernelsVariant = 'relaxed-simd' | 'simd128';
/** How the relaxed build takes its 4-bit dot products (native/kernels/wasm.c, `svc_q4_dot_pairs`). */
export type Q4Dot = 'accumulate' | 'pairs';
const FILES: Record<WasmKernelsVariant, string> = { 'relaxed-simd': 'svc_kernels_relaxed.wasm', simd128: 'svc_kernels.wasm' };

/** A module's bytes: the copy a single binary embeds (scripts/compile.mjs), else the file beside the sources or the bundle. */
function moduleBytes(variant: WasmKernelsVariant): Uint8Array<ArrayBuffer> | string {
  const embedded = embeddedAssets[`./native/kernels/${FILES[variant]}`];
  const urls = ['../../', '../'].map((up) => new URL(`${up}native/kernels/${FILES[variant]}`, import.meta.url));
  const file = embedded ?? urls.map((u) => fileURLToPath(u)).find((f) => existsSync(f));
  return file ? readFileSync(file) : `${fileURLToPath(urls[0]!)} is missing (npm run build:wasm-kernels)`;
}

const HANDLE = Symbol('svc.wasm.packed');

type Handle = { ptr: number; bits: 4 | 8 };

/** Typed arrays a call copies in (their bytes) or out. */
type Floats = Float32Array;

type Loaded = { kernels?: WasmKernels; reason?: string };

let loaded: Loaded | undefined;

/**
 * Whether the engine runs relaxed SIMD, and whether only behind V8's flag: Node 20's V8 has it there, and the
 * flag is set then (the process's V8 only; onnxruntime-web asks for relaxed SIMD only when told to).
 */
function relaxedSimd(bytes: Uint8Array<ArrayBuffer>): { ok: boolean; flagged: boolean } {
  if (!relaxedFlagSet && WebAssembly.validate(bytes)) return { ok: true, flagged: false };
  if (runtimeName !== 'node') return { ok: false, flagged: false };
  setFlagsFromString('--experimental-wasm-relaxed-simd');
  relaxedFlagSet = true;
  return { ok: WebAssembly.validate(bytes), flagged: true };
}
let relaxedFlagSet = false;

/**
 * Whether a 4-bit product gives the sums it must, computed here: scales of 1 and activations that are whole
 * numbers up to 127 (so that each block quantizes them as they are) make every output a whole number that a
 * float holds exactly. Seven rows (four, a pair and a single), then one (a decode step's: two quads at a time), each
 * way the rows are taken; five columns (a padded quad and one more).
 */
function q4Exact(e: Exports, memory: WebAssembly.Memory): boolean {
  const [k, n, m] = [64, 5, 7];
  const b = Uint8Array.from({ length: (n * k) / 2 }, (_, i) => (i * 7 + 3) & 255);
  const x = Float32Array.from({ length: m * k }, (_, i) => (i % 32 === 5 ? (i & 64 ? -127 : 127) : ((i * 37) % 255) - 127));
  const code = (col: number, j: number) => (b[(col * k + j) >> 1]! >> ((j & 1) * 4)) & 15;
  const at = e.svc_alloc(b.length + 4 * (n * k) / 32 + 4 * x.length + 4 * m * n);
  if (!at) return false;
  const [ps, px, py] = [at + b.length, at + b.length + (n * k) / 8, at + b.length + (n * k) / 8 + 4 * x.length];
  const mem = new Uint8Array(memory.buffer);
  mem.set(b, at);
  new Float32Array(memory.buffer, ps, (n * k) / 32).fill(1);
  new Float32Array(memory.buffer, px, x.length).set(x);
  const w = e.svc_pack_q4(at, ps, k, n);
  const ok = w !== 0 && [m, 1].every((rows) =>
    e.svc_matmul_q4(w, px, rows, py, 1) === 0 &&
    Array.from(new Float32Array(memory.buffer, py, rows * n)).every((y, i) => {
      let sum = 0;
      for (let j = 0; j < k; j++) sum += (code(i % n, j) - 8) * x[Math.floor(i / n) * k + j]!;
      return y === sum;
    })
  );
  e.svc_free_q4(w);
  e.svc_free(at);
  return ok;
}

/**
 * The faster dot product form of the relaxed build on this engine and CPU, timed on a decode step's product (one
 * row, 896 x 256, in the caches), the two alternating. V8 lowers the accumulating form to one instruction where
 * the CPU has VNNI and to three without (pairs took 0.82x its time there: 24 4-bit MLPs on Deno, an AMD EPYC with
 * AVX2), so which is faster depends on the machine. Both give the same integers (each checked by `q4Exact`).
 */
function fasterDot(e: Exports, memory: WebAssembly.Memory): Q4Dot {
  const [k, n] = [896, 256];
  const [codes, scales] = [k * n / 2, k * n / 32];
  const at = e.svc_alloc(codes + 4 * (scales + k + n));
  if (!at) return 'pairs';
  const [ps, px, py] = [at + codes, at + codes + 4 * scales, at + codes + 4 * (scales + k)];
  // plain values (whatever the heap held could be subnormal floats, which slow the float steps of both forms)
  new Uint8Array(memory.buffer, at, codes).fill(0x5a);
  new Float32Array(memory.buffer, ps, scales).fill(0.01);
  new Float32Array(memory.buffer, px, k).fill(0.5);
  const w = e.svc_pack_q4(at, ps, k, n);
  const best = { accumulate: Infinity, pairs: Infinity };
  try {
    if (!w) return 'pairs';
    // rounds long enough for the engine's optimizing tier to take over the kernels (it does after some use)
    for (let round = 0; round < 12; round++) {
      for (const form of ['accumulate', 'pairs'] as const) {
        e.svc_q4_dot_pairs(form === 'pairs' ? 1 : 0);
        const t = performance.now();
        for (let i = 0; i < 8; i++) e.svc_matmul_q4(w, px, 1, py, 1);
        best[form] = Math.min(best[form], performance.now() - t);
      }
    }
  } finally {
    if (w) e.svc_free_q4(w);
    e.svc_free(at);
  }
  return best.pairs <= best.accumulate ? 'pairs' : 'accumulate';
}

/** The kernels of `variant` (its 4-bit dot products as `dot` says), or of the best one the engine runs. */
function load(variant?: WasmKernelsVariant, dot?: Q4Dot): Loaded {
  let e: Exports;
  let path: WasmKernelsVariant;
  let memory: WebAssembly.Memory;
  let module: Uint8Array;
  let dotForm: Q4Dot | undefined;
  try {
    if (envVars().SVC_WASM_KERNELS === '0') return { reason: 'disabled by SVC_WASM_KERNELS=0' };
    const relaxed = variant === 'simd128' ? undefined : moduleBytes('relaxed-simd');
    const engine = typeof relaxed === 'object' ? relaxedSimd(relaxed) : { ok: false, flagged: false };
    if (variant === 'relaxed-simd' && !engine.ok) return { reason: 'this engine has no relaxed SIMD' };
    path = variant ?? (engine.ok ? 'relaxed-simd' : 'simd128');
    const bytes = path === 'relaxed-simd' && typeof relaxed === 'object' ? relaxed : moduleBytes(path);
    if (typeof bytes === 'string') return { reason: bytes };
    memory = new WebAssembly.Memory({ initial: MEMORY_PAGES, maximum: MAX_MEMORY_PAGES, shared: true });
    e = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports as unknown as Exports;
    module = bytes;
    // the attention's arguments are written where wasm.c's Attention has them (7 sizes, 9 arrays, the divisor, 3 arrays)
    if (e.svc_attention_size() !== ATTENTION_BYTES) {
      return { reason: `svc_kernels.wasm does not match this file (its Attention is not ${ATTENTION_BYTES} bytes)` };
    }
    if (path === 'relaxed-simd') {
      // pairs only on Node 20's V8 (behind its flag: its accumulating form gives wrong sums) and JavaScriptCore (it
      // runs pairs faster); elsewhere the faster of the two here (`fasterDot`)
      const forms: Q4Dot[] = dot ? [dot] : runtimeName === 'bun' || engine.flagged ? ['pairs'] : ['accumulate', 'pairs'];
      const exact = forms.filter((f) => e.svc_q4_dot_pairs(f === 'pairs' ? 1 : 0) && q4Exact(e, memory));
      if (!exact.length) {
        const reason = `the relaxed-SIMD build's 4-bit products (${forms.join(', ')}) give wrong sums on this engine`;
        return variant ? { reason } : load('simd128');
      }
      dotForm = exact.length > 1 ? fasterDot(e, memory) : exact[0]!;
      e.svc_q4_dot_pairs(dotForm === 'pairs' ? 1 : 0);
    }
  } catch (err) {
    return { reason: `the WASM kernels did not load: ${(err as Error).message}` };
  }
  return { kernels: kernelsOf(e, memory, module, `wasm-${path}`, dotForm) };
}

/** The arrays of `attention`, in the order wasm.c's Attention holds their pointers. */
const ATTENTION_ARRAYS = ['q', 'k', 'v', 'pos', 'cos', 'sin', 'pastK', 'pastV', 'mask', 'out', 'newK', 'newV'] as const;
/** The size of wasm.c's Attention (checked at load). */
const ATTENTION_BYTES = 80;

function kernelsOf(e: Exports, memory: WebAssembly.Memory, module: Uint8Array, path: string, dot?: Q4Dot): WasmKernels {
  const freed = new FinalizationRegistry<Handle>((h) => (h.bits === 4 ? e.svc_free_q4(h.ptr) : e.svc_free_q8(h.ptr)));
  /**
   * The module's memory as a SharedArrayBuffer (a new object each time it has grown, each one noted once) and
   * views of all of it, made again only then. A decode step makes a few hundred calls: each made its views
   * and arrays of pointers before, and on Bun the garbage they left cost more than copying the vectors.
   */
  const ours = new WeakSet<ArrayBufferLike>();
  let last: ArrayBufferLike | undefined;
  let u8 = new Uint8Array(0), f32 = new Float32Array(0), i32 = new Int32Array(0);
  /** Call after anything that may grow the memory (an allocation), before the views are used. */
  const views = () => {
    const b = memory.buffer;
    if (b !== last) {
      ours.add(last = b);
      [u8, f32, i32] = [new Uint8Array(b), new Float32Array(b), new Int32Array(b)];
    }
  };
  const buffer = () => (views(), last!);
  const bytes = () => (views(), u8);
  /** The arrays `floats` made, not yet freed. */
  const made = new WeakSet<Float32Array>();
  /** Where an array lies in the module's memory (views on shared memory stay valid as it grows), or -1. */
  const inModule = (a: ArrayBufferView) => (ours.has(a.buffer) ? a.byteOffset : -1);
  let workers = 0;
  /** Workers enough for a call on `threads` threads, started now if they are not yet: the call runs without them until they are. */
  const workersFor = (threads: number) => {
    for (; workers < Math.min(threads - 1, MAX_WORKERS); workers++) {
      const stack = e.svc_alloc(WORKER_STACK);
      if (!stack) return;
      const workerData = { bytes: module, memory, id: workers, stack: stack + WORKER_STACK };
      new Worker(new URL(`data:text/javascript,${encodeURIComponent(WORKER)}`), { workerData })
        // a worker that fails (to start: no memory, no permission) is left out, its share of each call done by the
        // caller and the others (wasm-pool.c); unheard, its error would end the process on Node and Bun
        .on('error', workerFailed)
        .unref();
    }
  };
  /** Bytes an array takes in a block: its own, rounded up to 16. */
  const padded = (a: ArrayBufferView) => (a.byteLength + 15) & ~15;
  /** A block of `size` bytes in the module's memory, the views made again if it grew the memory. */
  const alloc = (size: number, name: string) => {
    const block = e.svc_alloc(size);
    if (!block) throw new RangeError(`${name}: the WASM kernels are out of memory`);
    views();
    return block;
  };
  /** Copies `a` into the module's memory at `at` (a multiple of 4). */
  const put = (a: ArrayBufferView, at: number) =>
    a instanceof Float32Array ? f32.set(a, at >>> 2) : u8.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
  /** `arrays` copied into one block of the module's memory, each at a multiple of 16. Their pointers. */
  const copyIn = (arrays: ArrayBufferView[], name: string): { block: number; at: number[] } => {
    let size = 0;
    const offsets = arrays.map((a) => (size += padded(a)) - padded(a));
    const block = alloc(size, name);
    arrays.forEach((a, i) => put(a, block + offsets[i]!));
    return { block, at: offsets.map((o) => block + o) };
  };
  const copyOut = (ptr: number, to: Floats) => to.set(f32.subarray(ptr >>> 2, (ptr >>> 2) + to.length));
  const handle = (w: PackedQ4 | PackedQ8, bits: 4 | 8, name: string): number => {
    const h = (w as unknown as { [HANDLE]?: Handle })?.[HANDLE];
    if (h?.bits !== bits) throw new TypeError(`${name}: w must come from packQ${bits}`);
    return h.ptr;
  };
  const wrap = <T>(ptr: number, bits: 4 | 8, k: number, n: number, size: number): T => {
    if (!ptr) throw new RangeError(`packQ${bits}: the WASM kernels are out of memory`);
    const h: Handle = { ptr, bits };
    const w = Object.freeze({ k, n, bytes: size, [HANDLE]: h });
    freed.register(w, h);
    return w as unknown as T;
  };
  const whole = (v: number, name: string, what: string, lo = 1) => {
    if (!Number.isInteger(v) || v < lo) throw new TypeError(`${name}: ${what} must be a whole number >= ${lo}`);
  };
  const floats = (a: unknown, name: string, what: string) => {
    if (!(a instanceof Float32Array)) throw new TypeError(`${name}: ${what} must be a Float32Array`);
  };
  /** A product or an MLP: x [m][k] copied into a block with room for y [m][n] after it; the block. */
  const blockFor = (name: string, x: Floats, y: Floats) => {
    const block = alloc(padded(x) + y.byteLength, name);
    put(x, block);
    return block;
  };
  /** The checks the addon makes of a call's arguments; `portable` is checked, not used. The sets of rows, 1 where not given. */
  const product = (
    name: string,
    k: number,
    n: number,
    x: Floats,
    m: number,
    y: Floats,
    threads: number,
    portable?: boolean,
    sets?: number,
  ) => {
    floats(x, name, 'x');
    floats(y, name, 'y');
    whole(m, name, 'm');
    whole(threads, name, 'threads');
    if (portable !== undefined && typeof portable !== 'boolean') throw new TypeError(`${name}: portable must be a boolean`);
    if (sets !== undefined && (!Number.isInteger(sets) || sets < 1 || m % sets)) {
      throw new TypeError(`${name}: sets must be a whole number >= 1 that divides m`);
    }
    if (x.length !== m * k) throw new TypeError(`${name}: x must hold m * k values`);
    if (y.length !== m * n) throw new TypeError(`${name}: y must hold m * n values`);
    return sets ?? 1;
  };
  type Shape = { k: number; n: number };
  const mlp = (
    name: string,
    gate: Shape,
    up: Shape,
    down: Shape,
    x: Floats,
    m: number,
    y: Floats,
    threads: number,
    portable?: boolean,
    sets?: number,
  ) => {
    if (up.k !== gate.k || up.n !== gate.n) throw new TypeError(`${name}: gate and up must have the same k and n`);
    if (down.k !== gate.n || down.n !== gate.k) throw new TypeError(`${name}: down must be [gate's n -> gate's k]`);
    return product(name, gate.k, gate.k, x, m, y, threads, portable, sets);
  };
  /** matmulQ4 / matmulQ8: the checks, then `run` (the module's product) on the copies (the 4-bit one takes no sets). */
  const matmul = <W extends PackedQ4 | PackedQ8>(
    bits: 4 | 8,
    run: (w: number, x: number, m: number, y: number, threads: number, sets: number) => number,
  ) => {
    const name = `matmulQ${bits}`;
    return (w: W, x: Floats, m: number, y: Floats, threads: number, portable?: boolean, sets?: number) => {
      const p = handle(w, bits, name);
      const apart = product(name, w.k, w.n, x, m, y, threads, portable, sets);
      workersFor(threads);
      const block = blockFor(name, x, y);
      try {
        if (run(p, block, m, block + padded(x), threads, apart) !== 0) throw new RangeError(`${name}: the WASM kernels are out of memory`);
        copyOut(block + padded(x), y);
      } finally {
        e.svc_free(block);
      }
    };
  };
  /** mlpQ4 / mlpQ8 likewise. */
  const mlpOf = <W extends PackedQ4 | PackedQ8>(
    bits: 4 | 8,
    run: (g: number, u: number, d: number, x: number, m: number, y: number, threads: number, sets: number) => number,
  ): MlpCall<W> => {
    const name = `mlpQ${bits}`;
    return (gate, up, down, x, m, y, threads, portable, sets) => {
      const g = handle(gate, bits, name), u = handle(up, bits, name), d = handle(down, bits, name);
      const apart = mlp(name, gate, up, down, x, m, y, threads, portable, sets);
      workersFor(threads);
      const block = blockFor(name, x, y);
      try {
        if (run(g, u, d, block, m, block + padded(x), threads, apart) !== 0) {
          throw new RangeError(`${name}: the WASM kernels are out of memory`);
        }
        copyOut(block + padded(x), y);
      } finally {
        e.svc_free(block);
      }
    };
  };
  const kernels: WasmKernels = {
    path,
    packQ4: (b, scales, k, n) => {
      whole(k, 'packQ4', 'k', 32);
      whole(n, 'packQ4', 'n');
      if (k % 32) throw new TypeError('packQ4: k must be a multiple of 32');
      if (!(b instanceof Uint8Array)) throw new TypeError('packQ4: b must be a Uint8Array');
      floats(scales, 'packQ4', 'scales');
      if (b.length !== (n * k) / 2) throw new TypeError('packQ4: b must hold n * k / 2 bytes');
      if (scales.length !== (n * k) / 32) throw new TypeError('packQ4: scales must hold n * k / 32 values');
      const { block, at } = copyIn([b, scales], 'packQ4');
      try {
        return wrap<PackedQ4>(e.svc_pack_q4(at[0]!, at[1]!, k, n), 4, k, n, (Math.ceil(n / 4) * 4 * k * 20) / 32);
      } finally {
        e.svc_free(block);
      }
    },
    matmulQ4: matmul(4, e.svc_matmul_q4),
    mlpQ4: mlpOf(4, e.svc_mlp_q4),
    packQ8: (w, scales, k, n, zeroPoint) => {
      whole(k, 'packQ8', 'k');
      whole(n, 'packQ8', 'n');
      if (!Number.isInteger(zeroPoint) || zeroPoint < -128 || zeroPoint > 127) {
        throw new TypeError('packQ8: zeroPoint must be a whole number from -128 to 127');
      }
      if (!(w instanceof Int8Array) || w.length !== k * n) throw new TypeError('packQ8: w must be an Int8Array of k * n values');
      floats(scales, 'packQ8', 'scales');
      if (scales.length !== n) throw new TypeError('packQ8: scales must hold n values');
      if (zeroPoint !== 0 && w.some((v) => v - zeroPoint < -128 || v - zeroPoint > 127)) {
        throw new TypeError('packQ8: every w - zeroPoint must fit in int8');
      }
      const { block, at } = copyIn([scales, new Uint8Array(16 * n)], 'packQ8');
      try {
        const p = e.svc_new_q8(at[0]!, k, n);
        // 16 rows at a time through one small block: a whole copy would stay in the module's memory, which never shrinks
        for (let c = 0; p && 16 * c < k; c++) {
          const rows = w.subarray(16 * c * n, Math.min(16 * c + 16, k) * n);
          bytes().set(new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength), at[1]!);
          e.svc_pack_q8_rows(p, at[1]!, c, zeroPoint);
        }
        return wrap<PackedQ8>(p, 8, k, n, Math.ceil(n / 4) * 4 * (Math.ceil(k / 16) * 16 + 8));
      } finally {
        e.svc_free(block);
      }
    },
    matmulQ8: matmul(8, e.svc_matmul_q8),
    mlpQ8: mlpOf(8, e.svc_mlp_q8),
    rmsNorm: (x, w, epsilon, y) => {
      if (!w.length || w.length % 8 || x.length % w.length || y.length !== x.length) {
        throw new TypeError('rmsNorm: w must hold a multiple of 8 values, x whole rows of them, y as many as x');
      }
      const block = alloc(padded(x) + w.byteLength, 'rmsNorm');
      put(x, block);
      put(w, block + padded(x));
      try {
        e.svc_rms_norm(block, block + padded(x), w.length, x.length / w.length, epsilon, block);
        copyOut(block, y);
      } finally {
        e.svc_free(block);
      }
    },
    addInto: (a, b, y) => {
      if (!b.length || a.length % b.length || y.length !== a.length) {
        throw new TypeError("addInto: b must hold a's values or whole rows of them, y as many as a");
      }
      const block = alloc(padded(a) + b.byteLength, 'addInto');
      put(a, block);
      put(b, block + padded(a));
      try {
        e.svc_add_into(block, block + padded(a), a.length, b.length, block);
        copyOut(block, y);
      } finally {
        e.svc_free(block);
      }
    },
    // the module's two steps on one copy of the arrays: the sum made in a's place, copied out, then normalized there
    addRmsNorm: (a, b, w, epsilon, sum, y) => {
      if (!w.length || w.length % 8 || a.length % w.length || b.length !== a.length || sum.length !== a.length || y.length !== a.length) {
        throw new TypeError('addRmsNorm: w must hold a multiple of 8 values, a whole rows of them, b, sum and y as many as a');
      }
      const block = alloc(2 * padded(a) + w.byteLength, 'addRmsNorm');
      put(a, block);
      put(b, block + padded(a));
      put(w, block + 2 * padded(a));
      try {
        e.svc_add_into(block, block + padded(a), a.length, a.length, block);
        copyOut(block, sum);
        e.svc_rms_norm(block, block + 2 * padded(a), w.length, a.length / w.length, epsilon, block);
        copyOut(block, y);
      } finally {
        e.svc_free(block);
      }
    },
    attention: (a: AttentionArrays, ...[s, heads, kvHeads, d, divisor, threads, portable]: AttentionShape) => {
      // in the order the module reads their pointers
      const arrays = [a.q, a.k, a.v, a.pos, a.cos, a.sin, a.pastK, a.pastV, a.mask, a.out, a.newK, a.newV];
      for (let i = 0; i < arrays.length; i++) {
        if (i === 3 ? !(arrays[i] instanceof BigInt64Array) : !(arrays[i] instanceof Float32Array)) {
          throw new TypeError(`attention: ${ATTENTION_ARRAYS[i]} must be a ${i === 3 ? 'BigInt64Array' : 'Float32Array'}`);
        }
      }
      whole(s, 'attention', 's');
      whole(heads, 'attention', 'heads');
      whole(kvHeads, 'attention', 'kvHeads');
      whole(d, 'attention', 'headSize', 2);
      whole(threads, 'attention', 'threads');
      if (portable !== undefined && typeof portable !== 'boolean') throw new TypeError('attention: portable must be a boolean');
      const rows = a.pos.length / s, kw = kvHeads * d;
      const past = a.pastK.length / (rows * kw);
      if (
        !Number.isInteger(rows) || !rows || heads % kvHeads || d % 2 || a.q.length !== rows * s * heads * d ||
        a.k.length !== rows * s * kw || a.v.length !== a.k.length || a.cos.length % (d / 2) || a.sin.length !== a.cos.length ||
        !Number.isInteger(past) || a.pastV.length !== a.pastK.length || a.out.length !== a.q.length ||
        a.newK.length !== a.k.length || a.newV.length !== a.k.length
      ) {
        throw new TypeError("attention: the arrays' lengths do not agree with s, heads, kvHeads and headSize");
      }
      if (a.mask.length !== rows * s * (past + s)) throw new TypeError('attention: mask must hold s × (past + s) values a row');
      // the caches (`floats`, where the decoder's are kept) are read where they lie: a step copies no cache in
      let size = ATTENTION_BYTES;
      for (let i = 0; i < arrays.length; i++) if (inModule(arrays[i]!) < 0) size += padded(arrays[i]!);
      workersFor(threads);
      const block = alloc(size, 'attention');
      try {
        const p: number[] = new Array(arrays.length);
        for (let i = 0, at = block + ATTENTION_BYTES; i < arrays.length; i++) {
          p[i] = inModule(arrays[i]!);
          if (p[i]! < 0) put(arrays[i]!, p[i] = at), at += padded(arrays[i]!);
        }
        // wasm.c's Attention: 7 sizes, the pointers to 9 arrays, the divisor, 3 more pointers
        const w = block >>> 2;
        i32[w] = rows, i32[w + 1] = s, i32[w + 2] = past, i32[w + 3] = heads;
        i32[w + 4] = kvHeads, i32[w + 5] = d, i32[w + 6] = a.cos.length / (d / 2);
        for (let i = 0; i < 9; i++) i32[w + 7 + i] = p[i]!;
        f32[w + 16] = divisor;
        for (let i = 9; i < 12; i++) i32[w + 8 + i] = p[i]!;
        const r = e.svc_attention(block, threads);
        if (r === -1) throw new RangeError('attention: a position is outside the rotary caches');
        if (r !== 0) throw new RangeError('attention: the WASM kernels are out of memory');
        // the answers not already written where they lie
        if (inModule(a.out) < 0) copyOut(p[9]!, a.out);
        if (inModule(a.newK) < 0) copyOut(p[10]!, a.newK);
        if (inModule(a.newV) < 0) copyOut(p[11]!, a.newV);
      } finally {
        e.svc_free(block);
      }
    },
    rest: () => e.svc_rest(),
    floats: (length) => {
      const ptr = e.svc_alloc(4 * length);
      if (!ptr) return undefined;
      const a = new Float32Array(buffer(), ptr, length);
      made.add(a.fill(0));
      return a;
    },
    freeFloats: (a) => {
      if (made.delete(a)) e.svc_free(a.byteOffset);
    },
    dot,
    workerParts: () => e.svc_worker_parts(),
    memoryBytes: () => memory.buffer.byteLength,
  };
  return kernels;
}

/** The WASM kernels, or undefined where the module is missing, does not load or is turned off. Never throws. */
export function wasmKernels(): NativeKernels | undefined {
  loaded ??= load();
  return loaded.kernels;
}

/** The kernels of one build (and dot form), whichever the engine would take (for tests); a new instance each call. */
export function wasmKernelsOf(variant: WasmKernelsVariant, dot?: Q4Dot): WasmKernels {
  const l = load(variant, dot);
  if (!l.kernels) throw new Error(l.reason);
  return l.kernels;
}

/** Why wasmKernels() is undefined; undefined when it is not. */
export function wasmKernelsUnavailable(): string | undefined {
  loaded ??= load();
  return loaded.reason;
}
