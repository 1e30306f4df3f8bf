/** lcms-wasm ships no types; the few calls icc.ts makes go through an untyped module instance. */
declare module 'lcms-wasm' {
  export function instantiate(opts?: { wasmBinary?: Uint8Array; locateFile?: (name: string) => string }): Promise<unknown>;
}
