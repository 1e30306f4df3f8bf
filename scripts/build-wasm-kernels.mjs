// Builds svc's WebAssembly kernels (native/kernels/wasm.c and attention.c) into native/kernels/svc_kernels.wasm
// (128-bit SIMD) and svc_kernels_relaxed.wasm (relaxed SIMD too) with the Clang that @yowasp/clang ships as
// WebAssembly (no system compiler needed; the same compiler gives the same bytes, which
// test/runtime/wasm-kernels.test.ts checks against the committed files). `--check` builds into memory and exits
// 1 where a committed file differs.
import { runClang } from '@yowasp/clang';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'native', 'kernels');
/** The modules by file name, and the features each is built with. */
export const MODULES = { 'svc_kernels.wasm': ['-msimd128'], 'svc_kernels_relaxed.wasm': ['-msimd128', '-mrelaxed-simd'] };

/** The modules' bytes by file name, compiled from the sources in native/kernels. */
export async function buildWasmKernels() {
  const files = Object.fromEntries(
    ['wasm.c', 'attention.c', 'attention.h', 'logistic.h'].map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
  );
  // reactors (no main, no imports), no threads
  const args = ['clang', '--target=wasm32-wasip1', '-mexec-model=reactor', '-O3', '-Wall', '-Wextra', '-Werror'];
  const built = {};
  for (const [name, features] of Object.entries(MODULES)) {
    const out = await runClang([...args, ...features, 'wasm.c', 'attention.c', '-o', name], files, {
      stderr: (b) => b && process.stderr.write(b),
    });
    built[name] = out[name];
  }
  return built;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const built = await buildWasmKernels();
  let stale = 0;
  for (const [name, bytes] of Object.entries(built)) {
    const file = join(dir, name);
    if (!process.argv.includes('--check')) {
      writeFileSync(file, bytes);
      console.log(`wrote ${file} (${bytes.length} bytes)`);
    } else if (Buffer.compare(Buffer.from(bytes), readFileSync(file)) !== 0) {
      console.log(`${file} differs from its sources: npm run build:wasm-kernels`);
      stale++;
    }
  }
  process.exit(stale ? 1 : 0);
}
