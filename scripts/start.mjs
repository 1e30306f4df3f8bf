// `npm start` / `bun run start`: one package.json script, the invoking runtime's own way.
//  - npm (Node): build the bundle (dist/main.mjs) and run it in this process;
//  - bun run:    Bun runs the TypeScript directly (package.json scripts call `node`, so hand over to Bun).
// Flags after `--` reach the server unchanged. `deno task start` (deno.json) does not come through here.
import { execFileSync, spawn } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);

/**
 * The Bun that ran `bun run start`, or null when npm did. `bun run` starts this script itself, and it leaves
 * an inherited npm user agent alone (as under `npm test`), so the parent process is the reliable sign.
 */
function invokingBun() {
  let parent = '';
  try {
    parent = readlinkSync(`/proc/${process.ppid}/exe`);
  } catch {
    try {
      parent = execFileSync('ps', ['-o', 'comm=', '-p', String(process.ppid)], { encoding: 'utf8' }).trim();
    } catch { /* unknown */ }
  }
  if (/(^|[\\/])bun(\.exe)?$/.test(parent)) return parent;
  return (process.env.npm_config_user_agent ?? '').startsWith('bun/') ? process.env.npm_execpath || 'bun' : null;
}

const bun = invokingBun();
if (bun) {
  const child = spawn(bun, [`${root}src/main.ts`, ...args], { stdio: 'inherit' });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
} else {
  await import(pathToFileURL(`${root}scripts/build.mjs`).href);
  await import(pathToFileURL(`${root}dist/main.mjs`).href);
}
