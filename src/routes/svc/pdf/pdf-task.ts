/**
 * What every PDF task route shares: read the documents (three input forms, src/http/task-input.ts),
 * validate the options, run the service on the bytes, and deliver the output inline or as new file ids.
 * The routes themselves only name their options and call one service.
 */
import { readFile } from 'node:fs/promises';
import type { Handler } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { admitTaskInput, decodeBase64Field, type InputFile } from '../../../http/task-input.ts';
import { taskHandler } from '../../../http/task-route.ts';
import { invalidRequest, validate } from '../../../http/validate.ts';
import type { FileStore } from '../../../services/files/file-store.ts';
import { BinaryResult, type TaskContext } from '../../../services/jobs/task.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';
import { zipFiles } from '../../../services/pdf/lazy.ts';
import { checkFieldLengths } from '../../../services/limits.ts';
import { text } from '../task-options.ts';

export interface PdfRouteDeps {
  runner: TaskRunner;
  files: FileStore;
}

export interface PdfTaskInput<O> {
  files: InputFile[];
  otherFiles: Record<string, InputFile[]>;
  options: O;
  cleanup(): Promise<void>;
}

export interface PdfTaskDef<S extends v.GenericSchema> {
  name: string;
  options: S;
  /** how many documents the route takes (default exactly one) */
  files?: { min: number; max: number };
  run(docs: Uint8Array[], options: v.InferOutput<S>, ctx: TaskContext, input: PdfTaskInput<v.InferOutput<S>>): Promise<unknown>;
}

const one = { min: 1, max: 1 };
/** Options that carry a file in base64 rather than text: bounded by the upload size, not the field limit. */
const BINARY_OPTIONS: ReadonlySet<string> = new Set(['logo']);

export function pdfTask<S extends v.GenericSchema>(deps: PdfRouteDeps, def: PdfTaskDef<S>): Handler<AppEnv> {
  const count = def.files ?? one;
  return taskHandler<PdfTaskInput<v.InferOutput<S>>>(deps.runner, {
    name: def.name,
    async input(c) {
      return admitTaskInput(c, deps.files, (ti) => {
        const n = ti.files.length;
        if (n < count.min || n > count.max) {
          const want = count.max === 1 ? 'one document' : `${count.min} to ${count.max} documents`;
          throw invalidRequest(`${def.name} takes ${want} (got ${n}): multipart field "file", or "file"/"file_id"/"files" in JSON`, [{
            field: 'file',
            message: n ? 'too many' : 'required',
          }]);
        }
        const options = validate(def.options, ti.options);
        checkFieldLengths(options, { skip: BINARY_OPTIONS });
        return { files: ti.files, otherFiles: ti.otherFiles, options, cleanup: ti.cleanup };
      });
    },
    async run(input, ctx) {
      const docs = await Promise.all(input.files.map(async (f) => new Uint8Array(await readFile(f.path))));
      return def.run(docs, input.options, ctx, input);
    },
    cleanup: (input) => input.cleanup(),
  });
}

export const readInput = async (f: { path: string }) => new Uint8Array(await readFile(f.path));

/** The input's name without extension, safe for a filename (`fallback` when it has none). */
export const baseName = (input: { filename?: string } | undefined, fallback = 'document') =>
  (input?.filename ?? '').replace(/\.[A-Za-z0-9]{1,5}$/, '').replace(/[^\p{L}\p{N}._ -]+/gu, '_').slice(0, 100) || fallback;

/** Name of an output derived from the input's: report.pdf → report-merged.pdf. */
export const outName = (input: InputFile | undefined, suffix: string, ext = 'pdf') => `${baseName(input)}-${suffix}.${ext}`;

/** Service answers use camelCase; the native family answers in snake_case like the rest of its bodies. */
export function snakeKeys(value: Record<string, unknown>): Record<string, unknown>;
export function snakeKeys(value: unknown): unknown;
export function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(value)) out[k.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`)] = snakeKeys(x);
  return out;
}

/** Base64 (or a data: URL) of an option such as a watermark logo; 400 when it is empty or not base64. */
function decodeBase64Option(value: string, field: string): Uint8Array {
  const bytes = decodeBase64Field(value, field);
  if (!bytes.length) throw invalidRequest(`${field} is not valid base64`, [{ field, message: 'not base64' }]);
  return bytes;
}

/** Bytes of an option that may come as a file part, base64 in the field, or `<name>_file_id` (a logo, a certificate). */
export async function bytesOption(
  deps: { files: FileStore },
  ctx: TaskContext,
  input: PdfTaskInput<unknown>,
  name: string,
  b64?: string,
  fileId?: string,
): Promise<Uint8Array | undefined> {
  const part = input.otherFiles[name]?.[0];
  const given = [part, b64, fileId].filter((x) => x !== undefined);
  if (given.length > 1) {
    throw invalidRequest(`give ${name} once: a "${name}" file part, "${name}" in base64, or "${name}_file_id"`, [{
      field: name,
      message: 'given more than once',
    }]);
  }
  if (part) return readInput(part);
  if (b64 !== undefined) return decodeBase64Option(b64, name);
  if (fileId !== undefined) return readInput(await deps.files.get(ctx.owner.id, fileId));
  return undefined;
}

export interface Output {
  bytes: Uint8Array;
  filename: string;
  contentType: string;
  extra?: Record<string, unknown>;
}

async function saved(ctx: TaskContext, o: Output) {
  const file_id = await ctx.saveFile(o.bytes, { filename: o.filename, contentType: o.contentType });
  return { file_id, filename: o.filename, bytes: o.bytes.byteLength, content_type: o.contentType, ...o.extra };
}

/** One output: the bytes inline, or `{file_id, filename, bytes, content_type, ...extra}`. */
export async function deliverOne(ctx: TaskContext, how: 'inline' | 'file_id', o: Output): Promise<unknown> {
  ctx.signal.throwIfAborted();
  return how === 'file_id' ? saved(ctx, o) : new BinaryResult(o.bytes, o.contentType, o.filename);
}

/** One PDF named after the first input with `suffix` (report.pdf → report-ocr.pdf), delivered as deliverOne does. */
export function deliverPdf(
  ctx: TaskContext,
  how: 'inline' | 'file_id',
  input: { files: InputFile[] },
  suffix: string,
  bytes: Uint8Array,
  extra?: Record<string, unknown>,
): Promise<unknown> {
  return deliverOne(ctx, how, { bytes, filename: outName(input.files[0], suffix), contentType: 'application/pdf', extra });
}

/**
 * Several outputs: a stored zip inline (a single output is returned as itself when `singleAsItself`),
 * or `{files: [{file_id, filename, bytes, content_type, ...extra}]}`, one new file each, in order.
 */
export async function deliverMany(
  ctx: TaskContext,
  how: 'inline' | 'file_id',
  outputs: Output[],
  zipName: string,
  singleAsItself = false,
): Promise<unknown> {
  ctx.signal.throwIfAborted();
  if (how === 'file_id') {
    const files = [];
    for (const o of outputs) files.push(await saved(ctx, o));
    return { files };
  }
  if (singleAsItself && outputs.length === 1) return new BinaryResult(outputs[0]!.bytes, outputs[0]!.contentType, outputs[0]!.filename);
  return new BinaryResult(zipFiles(outputs.map((o) => ({ name: o.filename, bytes: o.bytes }))), 'application/zip', zipName);
}

/** A watermark's own fields, the same for PDFs and images (pdf-watermark, image-watermark, image-convert's `watermark`). */
export const watermarkFields = {
  text: v.optional(text),
  /** base64 image (PNG/JPEG for PDFs); or the multipart file field `logo`; or `logo_file_id` */
  logo: v.optional(v.string()),
  logo_file_id: v.optional(v.string()),
  layout: v.optional(v.picklist(['tiled', 'centered', 'corner'])),
  corner: v.optional(v.picklist(['top-left', 'top-right', 'bottom-left', 'bottom-right'])),
  opacity: v.optional(v.number()),
  rotation: v.optional(v.number()),
  font_size: v.optional(v.number()),
  color: v.optional(text),
  logo_width: v.optional(v.number()),
};
