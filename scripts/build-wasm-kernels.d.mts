/** The bytes of native/kernels/svc_kernels.wasm, compiled from native/kernels/wasm.c and attention.c. */
export function buildWasmKernels(): Promise<Uint8Array>;
