// Run by Bun (scripts/compile.mjs starts it): bundles src/main.ts into one executable.
// Native addons cannot be embedded, so the binary is built for its WASM paths:
//  - onnxruntime-node stays out; transformers.js' eager require of it is made tolerant, and backend.ts
//    injects onnxruntime-web (its bundle with the glue inlined) whose .wasm is embedded as a file;
//  - sharp resolves to a stub (null), so image code takes its WASM codecs;
//  - @libsql/client stays out and the store falls back to bun:sqlite.
import { resolve } from 'node:path';

// Only this script runs under Bun's own API; a minimal shape keeps `tsc` (Node types) honest without @types/bun.
interface PluginBuild {
  onResolve(o: { filter: RegExp }, cb: (a: { path: string }) => { path: string }): void;
  onLoad(o: { filter: RegExp }, cb: (a: { path: string }) => Promise<{ contents: string; loader: string }>): void;
}
declare const Bun: {
  build(
    o: Record<string, unknown> & { plugins: { name: string; setup(b: PluginBuild): void }[] },
  ): Promise<{ success: boolean; logs: unknown[] }>;
  file(path: string): { text(): Promise<string> };
};

const [entry = 'src/main.ts', outfile = 'dist/svc'] = process.argv.slice(2);
const ortDist = resolve('node_modules/onnxruntime-web/dist');

const result = await Bun.build({
  // The worker pool's entry is a second entry point: Bun embeds it and `new Worker` finds it by that path.
  entrypoints: [entry, 'src/services/workers/worker-entry.ts'],
  compile: { outfile },
  target: 'bun',
  minify: false,
  external: ['onnxruntime-node', '@libsql/client', '@libsql/kysely-libsql', '@hono/node-server'],
  plugins: [{
    name: 'svc-binary',
    setup(build) {
      build.onResolve({ filter: /^sharp$/ }, () => ({ path: resolve('scripts/compile-stubs/sharp.mjs') }));
      build.onResolve({ filter: /^onnxruntime-web(\/webgpu)?$/ }, (a) => ({
        path: `${ortDist}/${a.path.endsWith('webgpu') ? 'ort.webgpu.bundle.min.mjs' : 'ort.wasm.bundle.min.mjs'}`,
      }));
      build.onLoad({ filter: /transformers\.node\.mjs$/ }, async (a) => {
        const text = await Bun.file(a.path).text();
        const patched = text.replace(
          'requireFromHere("onnxruntime-node")',
          '(() => { try { return requireFromHere("onnxruntime-node"); } catch { return {}; } })()',
        );
        if (patched === text) throw new Error('transformers.js no longer requires onnxruntime-node the way the binary build expects');
        return { contents: patched, loader: 'js' };
      });
    },
  }],
});
if (!result.success) {
  for (const m of result.logs) console.error(m);
  process.exit(1);
}
console.log(`compiled ${outfile}`);
