/** Base64 over Web APIs only (services run on Deno, Bun and Node alike; no Buffer). */
export function bytesToBase64(bytes: Uint8Array): string {
  let bin = '';
  // Chunks keep String.fromCharCode's argument list short for large inputs.
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** URL-safe base64 without padding (RFC 4648 §5): tokens, ids and compaction content. */
export function bytesToBase64Url(bytes: Uint8Array): string {
  return bytesToBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
