/**
 * Resource limits, checked before heavy work starts (docs/limits.md). The values come from the settings
 * (src/config.ts) once at start; the defaults here are the same safe defaults. Each limit has its own
 * reason, and the message names the setting an operator can raise.
 */
import { ServiceError } from './errors.ts';

export interface Limits {
  /** decoded pixels (width × height) of one image */
  maxImagePixels: number;
  /** decompressed bytes of one PDF stream */
  maxPdfStreamBytes: number;
  /** decompressed bytes of all streams of one PDF */
  maxPdfDecompressedBytes: number;
  /** pages of one document */
  maxPages: number;
  /** characters of one text field of a request (passwords, queries, watermark text, ...) */
  maxFieldChars: number;
  /** nesting depth of a JSON value (schemas, tool parameters) */
  maxJsonDepth: number;
  /** characters of a prompt or embedding input, counted before tokenization */
  maxPromptChars: number;
  /** wall-clock deadline of one heavy task, in milliseconds */
  taskDeadlineMs: number;
}

export const defaultLimits: Limits = {
  maxImagePixels: 268_402_689,
  maxPdfStreamBytes: 256 * 1024 * 1024,
  maxPdfDecompressedBytes: 1024 * 1024 * 1024,
  maxPages: 5000,
  maxFieldChars: 10_000,
  maxJsonDepth: 64,
  maxPromptChars: 2_000_000,
  taskDeadlineMs: 300_000,
};

let current: Limits = { ...defaultLimits };

/** The process-wide limits (set once by the server at start; workers receive them with each task). */
export const limits = (): Limits => current;
export const setLimits = (l: Partial<Limits>): void => void (current = { ...current, ...l });

const setting: Record<keyof Limits, string> = {
  maxImagePixels: 'max-image-pixels',
  maxPdfStreamBytes: 'max-pdf-stream-bytes',
  maxPdfDecompressedBytes: 'max-pdf-decompressed-bytes',
  maxPages: 'max-pages',
  maxFieldChars: 'max-field-chars',
  maxJsonDepth: 'max-json-depth',
  maxPromptChars: 'max-prompt-chars',
  taskDeadlineMs: 'task-deadline-seconds',
};

/** The error for an exceeded limit: the reason and the message name it. */
export function limitExceeded(limit: keyof Limits, status: 413 | 422, reason: string, what: string, l: Limits = current): ServiceError {
  const max = limit === 'taskDeadlineMs' ? `${l.taskDeadlineMs / 1000} s` : String(l[limit]);
  return new ServiceError(status, reason, `${what}: over the limit of ${max} (setting --${setting[limit]})`, {
    fields: { limit: setting[limit] },
  });
}

export function checkPixels(width: number, height: number, l: Limits = current): void {
  const px = width * height;
  // 413 input_too_large, as the image routes answer for the same cause (src/services/images/probe.ts)
  if (!(px <= l.maxImagePixels)) {
    throw limitExceeded('maxImagePixels', 413, 'input_too_large', `the image declares ${width}×${height} = ${px} pixels`, l);
  }
}

export function checkPages(count: number, l: Limits = current): void {
  if (count > l.maxPages) throw limitExceeded('maxPages', 422, 'too_many_pages', `the document has ${count} pages`, l);
}

/** Every string inside `value` (a request's options) against maxFieldChars; names the field. */
export function checkFieldLengths(value: unknown, opts: { skip?: ReadonlySet<string>; limits?: Limits } = {}, path = ''): void {
  const l = opts.limits ?? current;
  if (typeof value === 'string') {
    if (value.length > l.maxFieldChars) {
      throw limitExceeded('maxFieldChars', 413, 'field_too_long', `field ${path || 'value'} has ${value.length} characters`, l);
    }
  } else if (Array.isArray(value)) value.forEach((x, i) => checkFieldLengths(x, opts, `${path}[${i}]`));
  else if (value && typeof value === 'object' && !(value instanceof Uint8Array)) {
    for (const [k, x] of Object.entries(value)) if (!opts.skip?.has(k)) checkFieldLengths(x, opts, path ? `${path}.${k}` : k);
  }
}

/** Nesting depth of a parsed JSON value, without recursion (a hostile value cannot overflow the stack). */
export function jsonDepth(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    for (const x of Array.isArray(v) ? v : Object.values(v)) if (x !== null && typeof x === 'object') stack.push([x, d + 1]);
  }
  return max;
}

export function checkJsonDepth(value: unknown, field: string, l: Limits = current): void {
  const d = jsonDepth(value);
  if (d > l.maxJsonDepth) throw limitExceeded('maxJsonDepth', 422, 'json_too_deep', `${field} is nested ${d} levels deep`, l);
}

/** Characters of a prompt, counted before any tokenization: 413 input_too_large at once. */
export function checkPromptChars(chars: number, l: Limits = current): void {
  if (chars > l.maxPromptChars) throw limitExceeded('maxPromptChars', 413, 'input_too_large', `the input has ${chars} characters`, l);
}

/** Characters of every string inside a value (messages, parts, tool definitions), without recursion. */
export function textChars(value: unknown): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') n += v.length;
    else if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v)) {
      for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
    }
  }
  return n;
}
