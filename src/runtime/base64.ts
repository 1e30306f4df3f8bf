/**
 * Base64 decoding of large request fields with the runtime's native codec (`node:buffer`, which Node, Deno
 * and Bun all serve): a document sent as base64 in JSON is several MB, and `atob` plus a copy character by
 * character holds the event loop several times longer (docs/workers.md, "Keeping the loop free").
 */
import { Buffer } from 'node:buffer';

const ALPHABET = /^[A-Za-z0-9+/_-]*={0,2}$/;

function native(text: string): Uint8Array | null {
  if (text.length % 4 === 1) return null; // no whole byte in the last character: not base64
  const buf = Buffer.from(text, 'base64');
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  // The native codecs skip (or stop at) what is outside the alphabet: a full-length result proves there was nothing.
  if (buf.byteLength !== Math.floor((text.length * 3) / 4) - pad) return null;
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** The bytes of standard or URL-safe base64 (padding optional, whitespace ignored), or null when it is not base64. */
export function decodeBase64(text: string): Uint8Array | null {
  const fast = native(text);
  if (fast) return fast;
  const clean = text.replace(/\s+/g, '');
  return ALPHABET.test(clean) ? native(clean) : null;
}
