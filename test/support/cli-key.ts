/** A key made as an operator makes one, with `svc keys create` against a database (fleet test and benchmark). */
import { execFileSync } from 'node:child_process';

/** Creates the key `name` on `databaseUrl` through svc's command line; its token. */
export function createKeyByCli(name: string, databaseUrl: string, dataDir: string): string {
  const out = execFileSync(process.execPath, [
    '--import',
    'tsx',
    'src/main.ts',
    'keys',
    'create',
    '--name',
    name,
    '--database-url',
    databaseUrl,
    '--data-dir',
    dataDir,
    '--log-level',
    'warn',
  ], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return JSON.parse(out).token;
}
