/**
 * Model names the way Ollama reads them: `[host/][namespace/]model[:tag]`.
 * Defaults (host `registry.ollama.ai`, namespace `library`, tag `latest`) are filled in so that
 * `qwen3`, `qwen3:latest` and `registry.ollama.ai/library/QWEN3:latest` name the same model.
 * Comparison is case-insensitive, as in Ollama.
 */
import { invalidArgument } from '../errors.ts';

export const DEFAULT_HOST = 'registry.ollama.ai';
export const DEFAULT_NAMESPACE = 'library';
export const DEFAULT_TAG = 'latest';

export interface ModelName {
  host: string;
  namespace: string;
  model: string;
  tag: string;
}

const PART = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}$/;
const HOST = /^[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?$/;

/** Parses a name; throws 400 invalid_argument when it cannot be a model name. */
export function parseModelName(input: string): ModelName {
  const raw = input.trim();
  const bad = () => invalidArgument(`invalid model name '${input}'`);
  if (!raw || raw.length > 350) throw bad();
  // A tag is the text after the last ':' that comes after the last '/' (a host may carry a port).
  const lastSlash = raw.lastIndexOf('/');
  const colon = raw.lastIndexOf(':');
  let path = raw;
  let tag = DEFAULT_TAG;
  if (colon > lastSlash) {
    tag = raw.slice(colon + 1);
    path = raw.slice(0, colon);
    if (!TAG.test(tag)) throw bad();
  }
  const parts = path.split('/');
  if (parts.length > 3) throw bad();
  const model = parts.pop()!;
  const namespace = parts.pop() ?? DEFAULT_NAMESPACE;
  const host = parts.pop() ?? DEFAULT_HOST;
  if (!PART.test(model) || !PART.test(namespace) || !HOST.test(host)) throw bad();
  return { host, namespace, model, tag };
}

/** Display form: defaults dropped the way Ollama lists names (`qwen3:latest`, `hf.co/o/r:q4`). */
export function displayName(n: ModelName): string {
  const isDefaultHost = n.host.toLowerCase() === DEFAULT_HOST;
  const isDefaultNs = n.namespace.toLowerCase() === DEFAULT_NAMESPACE;
  const prefix = isDefaultHost ? (isDefaultNs ? '' : `${n.namespace}/`) : `${n.host}/${n.namespace}/`;
  return `${prefix}${n.model}:${n.tag}`;
}

/** Lookup key: the display form, lower-cased (names compare case-insensitively). */
export function nameKey(input: string | ModelName): string {
  const n = typeof input === 'string' ? parseModelName(input) : input;
  return displayName(n).toLowerCase();
}

/** A model-hub reference: `<hub_host>/<owner>/<repo>[:<quant>]`. */
export interface HubReference {
  host: string;
  owner: string;
  repo: string;
  /** The tag as written; `latest` means "pick the default dtype". */
  quant: string;
}

/** A name with an explicit host other than Ollama's registry is a hub reference. */
export function asHubReference(n: ModelName): HubReference | undefined {
  if (n.host.toLowerCase() === DEFAULT_HOST) return undefined;
  return { host: n.host.toLowerCase(), owner: n.namespace, repo: n.model, quant: n.tag };
}
