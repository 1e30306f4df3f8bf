// Bundles the server for Node into dist/main.mjs (npm packages stay external, loaded from node_modules),
// and the worker pool's entry into dist/worker.mjs beside it (the bundle finds it through the define).
import { build } from 'esbuild';

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
};
await build({ ...common, entryPoints: ['src/services/workers/worker-entry.ts'], outfile: 'dist/worker.mjs' });

await build({
  define: { __SVC_WORKER_ENTRY__: '"./worker.mjs"' },
  ...common,
  entryPoints: ['src/main.ts'],
  outfile: 'dist/main.mjs',
  banner: { js: '#!/usr/bin/env node' },
});
