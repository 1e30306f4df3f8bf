/**
 * Browser builds of npm packages the pages of public/ load, served from node_modules so the playground
 * works offline with a same-origin CSP (no CDN):
 *
 *   /vendor/pdfjs/<build|cmaps|standard_fonts|wasm|iccs>/…  pdfjs-dist (pdf.js, its worker and the data it fetches)
 *   /vendor/transformers/dist/…  @huggingface/transformers (the web build, onnxruntime-web bundled in)
 *   /vendor/ort/dist/…           onnxruntime-web (the .wasm and .mjs loaders its WASM/WebGPU backends fetch)
 *
 * The path after the package's short name is the file's path inside the package.
 *
 * Only the listed folders and file kinds are reachable. A compiled binary has no node_modules: it carries the
 * files the pages load (scripts/compile.mjs lists them) and answers 404 for the rest.
 */
import type { MiddlewareHandler } from 'hono';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join, sep } from 'node:path';
import { fileStream } from '../services/files/file-stream.ts';
import { embeddedVendor } from '../runtime/embedded.ts';

interface VendorPackage {
  pkg: string;
  /** Folders (relative to the package root) that may be served. */
  folders: string[];
  /** File kinds that may be served. */
  exts: string[];
}

const PACKAGES: Record<string, VendorPackage> = {
  pdfjs: {
    pkg: 'pdfjs-dist',
    folders: ['build', 'cmaps', 'standard_fonts', 'wasm', 'iccs'],
    exts: ['.mjs', '.bcmap', '.pfb', '.ttf', '.wasm', '.icc'],
  },
  transformers: { pkg: '@huggingface/transformers', folders: ['dist'], exts: ['.js', '.mjs'] },
  ort: { pkg: 'onnxruntime-web', folders: ['dist'], exts: ['.mjs', '.wasm'] },
};

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
};

const require = createRequire(import.meta.url);

/** The installed package's root folder: the ancestor of its entry file named node_modules/<pkg>. */
function packageRoot(pkg: string): string | null {
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    return null;
  }
  const tail = `${sep}node_modules${sep}${pkg.split('/').join(sep)}`;
  for (let d = dirname(entry); d !== dirname(d); d = dirname(d)) if (d.endsWith(tail) && existsSync(join(d, 'package.json'))) return d;
  return null;
}

export function serveVendor(): MiddlewareHandler {
  const roots = new Map<string, string | null>();
  return async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') return next();
    const m = /^\/vendor\/([a-z]+)\/(.+)$/.exec(c.req.path);
    const spec = m ? PACKAGES[m[1]] : undefined;
    if (!m || !spec) return next();
    const parts = m[2].split('/');
    const ext = extname(m[2]);
    // one allowed folder, then plain names: no dot segments, no hidden files
    if (!spec.folders.includes(parts[0]) || parts.some((p) => p === '' || p.startsWith('.')) || !spec.exts.includes(ext)) return next();
    if (!roots.has(spec.pkg)) roots.set(spec.pkg, packageRoot(spec.pkg));
    const root = roots.get(spec.pkg);
    const headers = (size: number) => ({
      'Content-Type': TYPES[ext] ?? 'application/octet-stream',
      'Content-Length': String(size),
      'Cache-Control': 'public, max-age=3600',
    });
    if (!root) {
      const inBinary = embeddedVendor[c.req.path];
      if (!inBinary) return next();
      const bytes = new Uint8Array(await readFile(inBinary));
      return c.req.method === 'HEAD' ? c.body(null, 200, headers(bytes.length)) : c.body(bytes, 200, headers(bytes.length));
    }
    const file = join(root, ...parts);
    const st = await stat(file).catch(() => undefined);
    if (!st?.isFile()) return next();
    // streamed: onnxruntime-web's .wasm files are tens of MB
    return c.req.method === 'HEAD' ? c.body(null, 200, headers(st.size)) : c.body(fileStream(file), 200, headers(st.size));
  };
}
