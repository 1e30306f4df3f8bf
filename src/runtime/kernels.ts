/**
 * svc's own matrix kernels (native/kernels), an optional Node-API addon: 4-bit products in MatMulNBits' layout
 * (blocks of 32, no zero points) with activations quantized per block to int8 as ONNX Runtime's level 4
 * does, and 8-bit products as q8 graphs compute them (DynamicQuantizeLinear → MatMulInteger → Cast → Mul).
 * Loaded lazily, once, through `createRequire`, which loads `.node` files on Node, Bun and Deno alike.
 * Where the file is missing or does not load, svc keeps ONNX Runtime's kernels; the reason is kept.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { envVars } from './env.ts';

declare const packedQ4: unique symbol;
declare const packedQ8: unique symbol;

/** Repacked weights; the native memory is freed when this object is collected. */
export type PackedQ4 = {
  readonly k: number;
  readonly n: number;
  /** Bytes of the repacked codes and scales: 16 a block of 32 weights, and 2 (half) or 4 (fp32) for its scale. */
  readonly bytes: number;
  readonly [packedQ4]: true;
};
/** Repacked 8-bit weights; the native memory is freed when this object is collected. */
export type PackedQ8 = { readonly k: number; readonly n: number; readonly [packedQ8]: true };

export interface NativeKernels {
  /** 'avx512vnni', 'avx2' or 'portable': the path the products take unless told `portable` (native/kernels). */
  path: string;
  /**
   * b: [n][k/32][16] bytes, two codes a byte (low nibble first); scales: [n * k/32]; k a multiple of 32. Scales
   * that are all exactly half-precision values (as llama.cpp's Q4_0 and svc's quantizer make them) are kept
   * as halves, with the same results.
   */
  packQ4(b: Uint8Array, scales: Float32Array, k: number, n: number): PackedQ4;
  /** y[m][n] = Σ x[m][k]·W[n][k], the columns split over `threads` threads made for this call. */
  matmulQ4(w: PackedQ4, x: Float32Array, m: number, y: Float32Array, threads: number, portable?: boolean): void;
  /**
   * A Llama/Qwen2 MLP, y[m][hidden] = down(silu(gate(x)) · up(x)), as ONNX Runtime runs MatMulNBits (gate, up),
   * Sigmoid, Mul, Mul, MatMulNBits (down) at accuracy_level 4: x quantized once for gate and up, silu with MLAS's
   * logistic function, h = (g · sigmoid(g)) · u quantized per block for down. gate and up: [hidden → inter], down:
   * [inter → hidden] (else a TypeError); x and y: [m][hidden]. Each product's columns split over `threads` threads.
   */
  mlpQ4: MlpCall<PackedQ4>;
  /**
   * w: MatMulInteger's int8 weights [k][n] (row-major); scales: one per column [n]; zeroPoint: the weights' one
   * zero point, -128..127 (every w - zeroPoint must fit in int8, else a TypeError).
   */
  packQ8(w: Int8Array, scales: Float32Array, k: number, n: number, zeroPoint: number): PackedQ8;
  /**
   * y[m][n] = Σ (q[m][k] - zp)·(W[k][n] - w_zp) · scale · scales[n] where (q, scale, zp) = DynamicQuantizeLinear(x)
   * over all m rows together, as ONNX Runtime computes it; the columns split over `threads` threads. `sets`
   * (dividing m; default 1): the rows are quantized in that many equal sets, each by itself (one set per batch row
   * makes each row's values those it gets alone; else TypeError).
   */
  matmulQ8(w: PackedQ8, x: Float32Array, m: number, y: Float32Array, threads: number, portable?: boolean, sets?: number): void;
  /**
   * mlpQ4's MLP of 8-bit products, as ONNX Runtime runs a q8 graph's (each product DynamicQuantizeLinear →
   * MatMulInteger → Cast → Mul; Sigmoid, Mul, Mul): x quantized once for gate and up, h = silu(g) · u for down;
   * each quantization over `sets` equal sets of the rows, as matmulQ8's.
   */
  mlpQ8: MlpCall<PackedQ8>;
  /**
   * RMSNorm of each row of x (rows of w.length values, a multiple of 8) into y, as ONNX Runtime's
   * SimplifiedLayerNormalization computes it on x64: the squares summed in 8 lanes by fused multiply-adds, the
   * lanes added in halves, s = sqrt(sum / n + epsilon), then (x · (1 / s)) · w, in single precision. `portable`:
   * the plain-C steps, not the CPU's vector ones (the same bits; tests compare the two).
   */
  rmsNorm(x: Float32Array, w: Float32Array, epsilon: number, y: Float32Array, portable?: boolean): void;
  /** y = a + b; b as long as a, or one row of it repeated (a bias). */
  addInto(a: Float32Array, b: Float32Array, y: Float32Array): void;
  /** sum = a + b (as long as a), then rmsNorm(sum, w, epsilon, y): a residual sum and the norm that reads it, one call. */
  addRmsNorm(
    a: Float32Array,
    b: Float32Array,
    w: Float32Array,
    epsilon: number,
    sum: Float32Array,
    y: Float32Array,
    portable?: boolean,
  ): void;
  /**
   * The index of x's largest value, its first (NaN never chosen), 0 where none is above -Infinity: sampling.ts's
   * argmax. The addon's alone (WebAssembly's would gain little over the script's loop).
   */
  argmax?(x: Float32Array, portable?: boolean): number;
  /**
   * A sampler's weights, as sampling.ts's `weighEach` computes them in the script, bit for bit: each logit's
   * e^((v - max) · inv) into w (0 below floor), its exp from the table frac of 2^(j/256); with at and mass,
   * each candidate's bucket over max .. floor (mass.length of them; that count for the others) and each
   * bucket's weight. Returns the weights' sum. `portable`: the plain-C steps, not the CPU's vector ones (the same
   * bits; tests compare the two). The addon's alone.
   */
  weigh?(
    data: Float32Array,
    max: number,
    floor: number,
    inv: number,
    w: Float64Array,
    frac: Float64Array,
    at?: Uint16Array,
    mass?: Float64Array,
    portable?: boolean,
  ): number;
  /** sampling.ts's bucketMembers: the indices of at equal to b, in order, into members; how many. The addon's alone. */
  bucketMembers?(at: Uint16Array, b: number, members: Int32Array): number;
  /** sampling.ts's drawKept, bit for bit (the token, else -1). The addon's alone. */
  drawKept?(data: Float32Array, w: Float64Array, endVal: number, endIdx: number, r: number): number;
  /**
   * A decoder layer's attention for `s` new positions of each row, as svc's rewritten graphs compute it
   * (src/services/inference/attention-stage.ts): q, k rotated at each position's row of the caches, scores
   * against the cached and the new keys divided by `divisor`, the mask added, softmax, the values summed; query
   * head h reads key/value head h / (heads / kvHeads). Agrees with ONNX Runtime to float rounding (other sums).
   * Each row's positions and key/value heads are spread over `threads` threads (the products' kept threads).
   */
  attention(a: AttentionArrays, ...shape: AttentionShape): void;
  /**
   * Puts the threads that calls with more than one thread keep (spinning a while after each call, for the
   * next) to sleep now, until the next such call: other threads are about to need the cores.
   */
  rest(): void;
  /**
   * Where the kernels keep their own memory (the WASM module): a zeroed array of `length` floats in it, which
   * their calls read where it lies instead of copying it in (a KV cache read by every decode step's
   * attention), or undefined when that memory is full. Freed by `freeFloats`, not by the garbage collector.
   */
  floats?(length: number): Float32Array | undefined;
  /** Frees an array `floats` made (anything else is left alone). */
  freeFloats?(a: Float32Array): void;
}

/**
 * An MLP's call: its three products' weights (packed alike), x and y [m][hidden], the threads, the plain-C path for
 * tests, and for 8 bits the sets of rows quantized apart (matmulQ8; 4 bits take each row by itself anyway).
 */
export type MlpCall<W> = (
  gate: W,
  up: W,
  down: W,
  x: Float32Array,
  m: number,
  y: Float32Array,
  threads: number,
  portable?: boolean,
  sets?: number,
) => void;

/** An attention's sizes after its arrays, the divisor of its scores, its threads, and the plain-C path for tests. */
export type AttentionShape = [
  s: number,
  heads: number,
  kvHeads: number,
  headSize: number,
  divisor: number,
  threads: number,
  portable?: boolean,
];

/**
 * An attention's arrays: q [rows][s][heads·d]; k, v [rows][s][kvHeads·d]; pos [rows][s], rows of cos and sin
 * ([rope rows][d/2]); pastK, pastV [rows][kvHeads][past][d]; mask [rows][s][past + s]; out as q; newK (rotated)
 * and newV [rows][kvHeads][s][d].
 */
export interface AttentionArrays {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  pos: BigInt64Array;
  cos: Float32Array;
  sin: Float32Array;
  pastK: Float32Array;
  pastV: Float32Array;
  mask: Float32Array;
  out: Float32Array;
  newK: Float32Array;
  newV: Float32Array;
}

/** The addon's exports: the steps between products as NativeKernels has them, the products on handles. */
interface Addon
  extends Pick<NativeKernels, 'rmsNorm' | 'addInto' | 'addRmsNorm'>, Required<Pick<NativeKernels, 'weigh' | 'bucketMembers' | 'drawKept'>> {
  packQ4(b: Uint8Array, scales: Float32Array, k: number, n: number): object;
  packedBytes(w: object): number;
  matmulQ4(w: object, x: Float32Array, m: number, y: Float32Array, threads: number, portable?: boolean): void;
  mlpQ4: MlpCall<object>;
  packQ8(w: Int8Array, scales: Float32Array, k: number, n: number, zeroPoint: number): object;
  matmulQ8(w: object, x: Float32Array, m: number, y: Float32Array, threads: number, portable?: boolean, sets?: number): void;
  mlpQ8: MlpCall<object>;
  argmax(x: Float32Array, portable?: boolean): number;
  attention(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    pos: BigInt64Array,
    cos: Float32Array,
    sin: Float32Array,
    pastK: Float32Array,
    pastV: Float32Array,
    mask: Float32Array,
    out: Float32Array,
    newK: Float32Array,
    newV: Float32Array,
    ...shape: AttentionShape
  ): void;
  rest(): void;
  kernelPath(): string;
}

/** Where the built addon lies from this module: in the sources (src/runtime/) or in the bundle (dist/). */
const ADDON = ['../../', '../'].map((up) => new URL(`${up}native/kernels/build/Release/svc_kernels.node`, import.meta.url));
/** The addon's external (its weights, 4- or 8-bit) on the wrapper that carries k and n for TypeScript. */
const HANDLE = Symbol('svc.packed');

/** The addon's external behind a wrapper; anything else (undefined included) the addon refuses with a TypeError. */
const handle = (w: PackedQ4 | PackedQ8): object => (w as unknown as { [HANDLE]?: object })?.[HANDLE] as object;

let loaded: { kernels?: NativeKernels; reason?: string } | undefined;

function load(): { kernels?: NativeKernels; reason?: string } {
  let addon: Addon;
  let path: string;
  try {
    if (envVars().SVC_NATIVE_KERNELS === '0') return { reason: 'disabled by SVC_NATIVE_KERNELS=0' };
    const file = ADDON.map((u) => fileURLToPath(u)).find((f) => existsSync(f));
    if (!file) return { reason: `${fileURLToPath(ADDON[0]!)} is not built (npm run build:native)` };
    addon = createRequire(import.meta.url)(file) as Addon;
    path = addon.kernelPath();
  } catch (e) {
    // Deno without --allow-env, --allow-read or --allow-ffi lands here too
    return { reason: `the native kernels did not load: ${(e as Error).message}` };
  }
  return {
    kernels: {
      path,
      packQ4: (b, scales, k, n) => {
        const h = addon.packQ4(b, scales, k, n);
        return Object.freeze({ k, n, bytes: addon.packedBytes(h), [HANDLE]: h }) as unknown as PackedQ4;
      },
      matmulQ4: (w, x, m, y, threads, portable) => addon.matmulQ4(handle(w), x, m, y, threads, portable),
      mlpQ4: (gate, up, down, x, m, y, threads, portable) =>
        addon.mlpQ4(handle(gate), handle(up), handle(down), x, m, y, threads, portable),
      packQ8: (w, scales, k, n, zeroPoint) =>
        Object.freeze({ k, n, [HANDLE]: addon.packQ8(w, scales, k, n, zeroPoint) }) as unknown as PackedQ8,
      matmulQ8: (w, x, m, y, threads, portable, sets) => addon.matmulQ8(handle(w), x, m, y, threads, portable, sets),
      mlpQ8: (gate, up, down, x, m, y, threads, portable, sets) =>
        addon.mlpQ8(handle(gate), handle(up), handle(down), x, m, y, threads, portable, sets),
      rmsNorm: (x, w, epsilon, y, portable) => addon.rmsNorm(x, w, epsilon, y, portable),
      addInto: (a, b, y) => addon.addInto(a, b, y),
      addRmsNorm: (a, b, w, epsilon, sum, y, portable) => addon.addRmsNorm(a, b, w, epsilon, sum, y, portable),
      argmax: (x, portable) => addon.argmax(x, portable),
      weigh: (data, max, floor, inv, w, frac, at, mass, portable) => addon.weigh(data, max, floor, inv, w, frac, at, mass, portable),
      bucketMembers: (at, b, members) => addon.bucketMembers(at, b, members),
      drawKept: (data, w, endVal, endIdx, r) => addon.drawKept(data, w, endVal, endIdx, r),
      rest: () => addon.rest(),
      attention: (a, ...shape) =>
        addon.attention(a.q, a.k, a.v, a.pos, a.cos, a.sin, a.pastK, a.pastV, a.mask, a.out, a.newK, a.newV, ...shape),
    },
  };
}

/** The kernels, or undefined where they are not built, do not load or are turned off. Never throws. */
export function nativeKernels(): NativeKernels | undefined {
  loaded ??= load();
  return loaded.kernels;
}

/** Why nativeKernels() is undefined; undefined when it is not. */
export function nativeKernelsUnavailable(): string | undefined {
  loaded ??= load();
  return loaded.reason;
}
