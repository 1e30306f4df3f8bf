// Bundles the server for Node into dist/main.mjs (npm packages stay external, loaded from node_modules).
import { build } from 'esbuild';

await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/main.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  banner: { js: '#!/usr/bin/env node' },
});
