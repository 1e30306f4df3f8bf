/** `svc keys create|list|revoke`: manage API keys against the data directory without a running server. */
import type { Config } from './config.ts';
import { openServices } from './server.ts';
import { createLogger } from './log.ts';
import type { Role } from './services/keys/api-keys.ts';

export async function keysCommand(config: Config, words: string[], flags: Map<string, string>): Promise<number> {
  const s = await openServices(config, createLogger('warn'));
  try {
    const [sub, arg] = words;
    if (sub === 'create') {
      const role = flags.get('role') as Role | undefined;
      if (role && role !== 'admin' && role !== 'user') throw new Error('--role must be admin or user');
      const key = await s.keys.create({ name: flags.get('name') ?? arg ?? 'default', role });
      console.log(JSON.stringify(key, null, 2));
      console.error('The token is shown only once: store it now.');
      return 0;
    }
    if (sub === 'list') {
      console.log(JSON.stringify(await s.keys.list(), null, 2));
      return 0;
    }
    if (sub === 'revoke' && arg) {
      console.log(JSON.stringify(await s.keys.revoke(arg), null, 2));
      return 0;
    }
    console.error('usage: svc keys create --name <name> [--role admin|user] | svc keys list | svc keys revoke <key-id>');
    return 2;
  } catch (e) {
    console.error(`svc keys: ${(e as Error).message}`);
    return 1;
  } finally {
    await s.close();
  }
}
