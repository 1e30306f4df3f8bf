// Builds svc's WebAssembly kernels (native/kernels/wasm.c and attention.c) into native/kernels/svc_kernels.wasm
// with the Clang that @yowasp/clang ships as WebAssembly (no system compiler needed; the same compiler gives
// the same bytes, which test/runtime/wasm-kernels.test.ts checks against the committed file). `--check` builds
// into memory and exits 1 where the committed file differs.
import { runClang } from '@yowasp/clang';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = join(dirname(fileURLToPath(import.meta.url)), '..', 'native', 'kernels');
const OUT = 'svc_kernels.wasm';

/** The module's bytes, compiled from the sources in native/kernels. */
export async function buildWasmKernels() {
  const files = Object.fromEntries(['wasm.c', 'attention.c', 'attention.h'].map((f) => [f, readFileSync(join(dir, f), 'utf8')]));
  // a reactor (no main, no imports): 128-bit SIMD, no threads
  const args = ['clang', '--target=wasm32-wasip1', '-mexec-model=reactor', '-O3', '-msimd128', '-Wall', '-Wextra', '-Werror'];
  const out = await runClang([...args, 'wasm.c', 'attention.c', '-o', OUT], files, { stderr: (b) => b && process.stderr.write(b) });
  return out[OUT];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const bytes = await buildWasmKernels();
  const file = join(dir, OUT);
  if (process.argv.includes('--check')) {
    const same = Buffer.compare(Buffer.from(bytes), readFileSync(file)) === 0;
    console.log(same ? `${file} is up to date` : `${file} differs from its sources: npm run build:wasm-kernels`);
    process.exit(same ? 0 : 1);
  }
  writeFileSync(file, bytes);
  console.log(`wrote ${file} (${bytes.length} bytes)`);
}
