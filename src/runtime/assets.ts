/**
 * Files shipped inside npm packages (WASM codecs, fonts), found the same way on every runtime — and inside
 * the single binary, where node_modules is absent and scripts/compile.mjs embeds them instead.
 */
import { createRequire } from 'node:module';
import { embeddedAssets } from './embedded.ts';

const require = createRequire(import.meta.url);

/** The path of `spec` (`package/sub/path.wasm`): the embedded copy in a compiled binary, else the installed file. */
export function packageFile(spec: string): string {
  return embeddedAssets[spec] ?? require.resolve(spec);
}
