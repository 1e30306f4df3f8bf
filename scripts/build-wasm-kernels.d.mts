/** The modules svc_kernels.wasm and svc_kernels_relaxed.wasm by file name, and the features each is built with. */
export const MODULES: Record<string, string[]>;
/** Their bytes by file name, compiled from native/kernels/wasm.c and attention.c. */
export function buildWasmKernels(): Promise<Record<string, Uint8Array>>;
