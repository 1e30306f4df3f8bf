// `npm start` / `bun run start`: one package.json script, the invoking runtime's own way.
//  - npm (Node): build the bundle (dist/main.mjs) and run it in this process;
//  - bun run:    Bun runs the TypeScript directly (package.json scripts call `node`, so hand over to Bun).
// Flags after `--` reach the server unchanged. `deno task start` (deno.json) does not come through here.
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const agent = process.env.npm_config_user_agent ?? '';

if (agent.startsWith('bun/')) {
  const bun = process.env.npm_execpath || 'bun';
  const child = spawn(bun, [`${root}src/main.ts`, ...args], { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  await import(pathToFileURL(`${root}scripts/build.mjs`).href);
  await import(pathToFileURL(`${root}dist/main.mjs`).href);
}
