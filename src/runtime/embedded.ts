// Assets a compiled single binary carries inside itself. scripts/compile.mjs rewrites this module for the
// build and restores it after; everywhere else nothing is embedded and files are read from node_modules.
export const embeddedPublic: Record<string, string> = {};
/** Path (inside the binary) of onnxruntime-web's .wasm, or null when running from source. */
export const embeddedOrtWasmPath: string | null = null;
/** Package files by spec (`@embedpdf/pdfium/pdfium.wasm`) → path inside the binary. */
export const embeddedAssets: Record<string, string> = {};
/** Browser files of public/'s pages by their /vendor/ path (src/http/vendor.ts) → path inside the binary. */
export const embeddedVendor: Record<string, string> = {};
