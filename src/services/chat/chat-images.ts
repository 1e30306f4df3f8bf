/**
 * The images of a chat request, as pixels a vision model's processor takes: base64 bytes (data URLs,
 * Ollama `images`, Anthropic base64 blocks) or an http(s) URL fetched under the image egress policy (off
 * unless hosts are allowed). Decoding runs in the worker pool after the pixel limit is checked on the
 * image's header, so a decompression bomb is refused before any pixel is allocated.
 */
import { concatBytes } from '../bytes.ts';
import { invalidArgument, ServiceError } from '../errors.ts';
import { EgressPolicy } from '../models/egress.ts';
import { workers } from '../workers/index.ts';

/** Decoded RGBA pixels, row-major. */
export interface ChatImage {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

export interface ImageFetchOptions {
  /** Hosts an image URL may name (subdomains included); empty: image URLs are refused. */
  allowedHosts: readonly string[];
  /** Largest image body read from a URL, in bytes. */
  maxBytes?: number;
  signal?: AbortSignal;
}

const MAX_IMAGE_BYTES = 32 * 1024 * 1024;
const MAX_REDIRECTS = 5;

/** The bytes of one image reference: base64 text or an http(s) URL. */
export async function imageBytes(ref: string, o: ImageFetchOptions): Promise<Uint8Array> {
  if (/^https?:\/\//i.test(ref)) return fetchImage(ref, o);
  if (/^data:/i.test(ref)) {
    const m = /^data:[^,;]*(;[^,]*)?;base64,(.*)$/is.exec(ref);
    if (!m) throw invalidArgument('an image data URL must be base64-encoded (data:image/...;base64,...)');
    return decodeBase64(m[2]!);
  }
  return decodeBase64(ref);
}

function decodeBase64(b64: string): Uint8Array {
  const clean = b64.replace(/\s+/g, '');
  let bin: string;
  try {
    bin = atob(clean);
  } catch {
    throw invalidArgument('an image is neither valid base64 nor an http(s) URL');
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  if (out.length === 0) throw invalidArgument('an image is empty');
  return out;
}

async function fetchImage(url: string, o: ImageFetchOptions): Promise<Uint8Array> {
  const policy = new EgressPolicy([], o.allowedHosts);
  let target = new URL(url);
  for (let hop = 0;; hop++) {
    if (!policy.allowedHosts.length) {
      throw new ServiceError(
        403,
        'egress_denied',
        `image URL host '${target.host}' refused: image URLs are not fetched by this server (setting --chat-image-allowed-hosts is empty); send the image as a data URL or base64`,
        { fields: { host: target.host } },
      );
    }
    if (!policy.allows(target.host)) {
      throw new ServiceError(
        403,
        'egress_denied',
        `image host '${target.host}' is not allowed by the egress policy (setting --chat-image-allowed-hosts: ${
          policy.allowedHosts.join(', ')
        })`,
        { fields: { host: target.host } },
      );
    }
    let res: Response;
    try {
      res = await fetch(target, { redirect: 'manual', signal: o.signal });
    } catch (e) {
      if (o.signal?.aborted) throw e;
      throw new ServiceError(502, 'upstream_error', `could not fetch the image at ${target.origin}: ${(e as Error).message}`);
    }
    const loc = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && loc) {
      await res.body?.cancel();
      if (hop >= MAX_REDIRECTS) throw new ServiceError(502, 'upstream_error', `the image URL redirected more than ${MAX_REDIRECTS} times`);
      target = new URL(loc, target);
      continue;
    }
    if (!res.ok) {
      await res.body?.cancel();
      // the client named an image that is not there: its fault, not ours
      throw invalidArgument(`the image URL answered HTTP ${res.status}`);
    }
    return readCapped(res, o.maxBytes ?? MAX_IMAGE_BYTES);
  }
}

async function readCapped(res: Response, max: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length'));
  if (declared > max) throw new ServiceError(413, 'input_too_large', `the image at the URL is ${declared} bytes, more than ${max}`);
  const chunks: Uint8Array[] = [];
  let n = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > max) {
      await reader.cancel();
      throw new ServiceError(413, 'input_too_large', `the image at the URL is more than ${max} bytes`);
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

/** Every image of a request, fetched and decoded in order (the order their placeholders take in the prompt). */
export async function loadChatImages(refs: string[], o: ImageFetchOptions): Promise<ChatImage[]> {
  const out: ChatImage[] = [];
  for (const ref of refs) {
    const bytes = await imageBytes(ref, o);
    out.push(await workers.run('image.decode-rgba', [bytes], { signal: o.signal }));
  }
  return out;
}
