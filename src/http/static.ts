/** Serves the files of public/ (playground, admin console) with node:fs, which all three runtimes have. */
import type { MiddlewareHandler } from 'hono';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/** public/ beside src/ (TypeScript run directly) or beside dist/ (Node bundle), else under the working directory. */
export function findPublicDir(): string | null {
  const candidates: string[] = [];
  try {
    candidates.push(fileURLToPath(new URL('../../public/', import.meta.url)), fileURLToPath(new URL('../public/', import.meta.url)));
  } catch { /* not a file: URL inside a compiled binary */ }
  candidates.push(resolve(process.cwd(), 'public'));
  return candidates.find((d) => existsSync(join(d, 'index.html'))) ?? null;
}

export function serveStatic(dir: string | null, embedded: Record<string, string> = {}): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') return next();
    let rel: string;
    try {
      rel = decodeURIComponent(c.req.path);
    } catch {
      return next(); // malformed percent-encoding names no file: the 404 that follows
    }
    if (rel.includes('\0')) return next();
    if (rel.endsWith('/')) rel += 'index.html';
    const clean = normalize(rel).replace(/^(\.\.[/\\])+/, '');
    const type = TYPES[extname(clean)] ?? 'application/octet-stream';
    if (dir) {
      const file = join(dir, clean);
      if (file.startsWith(dir)) {
        try {
          const body = await readFile(file);
          return c.req.method === 'HEAD'
            ? c.body(null, 200, { 'Content-Type': type })
            : c.body(new Uint8Array(body), 200, { 'Content-Type': type });
        } catch { /* fall through */ }
      }
    }
    if (embedded[clean] !== undefined) {
      return c.req.method === 'HEAD' ? c.body(null, 200, { 'Content-Type': type }) : c.body(embedded[clean], 200, { 'Content-Type': type });
    }
    return next();
  };
}
