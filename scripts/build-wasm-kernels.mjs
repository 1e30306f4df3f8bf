// Builds svc's WebAssembly kernels (native/kernels/wasm.c, its heap, pool and attention.c) into native/kernels/svc_kernels.wasm
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
/** The C files each module is compiled from. */
const SOURCES = ['wasm.c', 'wasm-heap.c', 'wasm-pool.c', 'attention.c'];
/** The memory a module imports: its first size and its most, in pages of 64 KiB (src/runtime/wasm-kernels.ts makes it). */
export const MEMORY_PAGES = 16;
export const MAX_MEMORY_PAGES = 65535;

/** The modules' bytes by file name, compiled from the sources in native/kernels. */
export async function buildWasmKernels() {
  const files = Object.fromEntries(
    SOURCES.concat(['attention.h', 'logistic.h', 'wasm-pool.h']).map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
  );
  // Libraries of functions (no entry point), over a shared memory they import (worker threads run on it too):
  // MEMORY_PAGES at first, at most MAX_MEMORY_PAGES (under 4 GiB, so that a byte count fits 32 bits). Their own
  // heap stands in for wasi-libc's malloc (built without atomics, which shared memory needs); the rest of
  // wasi-libc they use (expf, lrintf) is plain functions. Each instance's stack pointer is exported: a worker
  // sets its own.
  // Instructions in source order (`-pre-RA-sched=source`): the default scheduler clusters a loop turn's loads at its
  // top (a WebAssembly target has no register count to respect), and V8 keeps them all live, spilling on x64. 24
  // 4-bit MLPs, one row, one thread (an AMD EPYC with AVX2, builds alternating in one process, paired ratios):
  // 0.90-0.92x the time on Node 20, 0.97-0.99x on Bun and Deno; the 8-bit ones and the 128-bit build unchanged.
  const compile = '--target=wasm32-wasip1 -O3 -Wall -Wextra -Werror -matomics -mbulk-memory -nostartfiles'.split(' ')
    .concat(['-mllvm', '-pre-RA-sched=source']);
  const link = ['--no-entry', '--shared-memory', '--import-memory', '--export=__stack_pointer']
    .concat([`--initial-memory=${MEMORY_PAGES * 65536}`, `--max-memory=${MAX_MEMORY_PAGES * 65536}`])
    .map((a) => `-Wl,${a}`);
  const args = ['clang', ...compile, ...link];
  const built = {};
  for (const [name, features] of Object.entries(MODULES)) {
    const out = await runClang([...args, ...features, ...SOURCES, '-o', name], files, {
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
