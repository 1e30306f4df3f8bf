/**
 * The node's 6-character tag, generated once and kept in the data directory (not the database:
 * nodes of a fleet share one database but each has its own data directory and tag).
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function newTag(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return Array.from(bytes, (b) => ALPHABET[b % ALPHABET.length]).join('');
}

/** The configured tag when one is set (a fleet's balancer knows it), else the one kept in the data directory. */
export async function loadNodeTag(dataDir: string, fixed = ''): Promise<string> {
  if (fixed) return fixed;
  const file = join(dataDir, 'node-tag');
  try {
    const tag = (await readFile(file, 'utf8')).trim();
    if (/^[a-z0-9]{6}$/.test(tag)) return tag;
  } catch { /* first start */ }
  await mkdir(dataDir, { recursive: true });
  const tag = newTag();
  const tmp = `${file}.${tag}.tmp`;
  await writeFile(tmp, `${tag}\n`);
  await rename(tmp, file); // atomic: a crash never leaves a half-written tag
  return tag;
}
