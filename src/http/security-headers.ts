/**
 * Security headers on the pages of public/ (playground, admin console): a strict CSP (scripts and styles
 * from our own origin only; no inline scripts), no framing, no MIME sniffing, no referrer.
 */
import type { MiddlewareHandler } from 'hono';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "media-src 'self' blob:",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The playground also compiles WebAssembly (onnxruntime-web for in-browser inference, pdf.js' decoders):
 * 'wasm-unsafe-eval' allows WebAssembly.compile and nothing else (no JavaScript eval). Other pages go without.
 */
export const PLAYGROUND_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace(
  "script-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
);
const WASM_PAGES = new Set(['/playground.html']);

export function securityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    if (!(c.res.headers.get('content-type') ?? '').startsWith('text/html')) {
      c.res.headers.set('X-Content-Type-Options', 'nosniff');
      return;
    }
    c.res.headers.set('Content-Security-Policy', WASM_PAGES.has(c.req.path) ? PLAYGROUND_CONTENT_SECURITY_POLICY : CONTENT_SECURITY_POLICY);
    c.res.headers.set('X-Frame-Options', 'DENY');
    c.res.headers.set('X-Content-Type-Options', 'nosniff');
    c.res.headers.set('Referrer-Policy', 'no-referrer');
    c.res.headers.set('Cross-Origin-Opener-Policy', 'same-origin');
  };
}
