/**
 * Documents given to a task route, in the three accepted forms (docs/jobs.md, "Inputs and uploads"):
 *  - multipart/form-data: field `file` (repeated, in order, for several), options as further fields;
 *  - JSON with `input_format: "Base64EncodedFile"` and `file` (base64), or `files: [{file, filename?}]`;
 *  - JSON with `input_format: "FileIdentifier"` and `file_id` (or `file` / `file_ids` / `files: [{file_id}]`).
 * Every form ends as files on disk; what this request created is removed by cleanup().
 */
import type { Context } from 'hono';
import { type FileStore, type StoredFile, TASK_INPUT } from '../services/files/file-store.ts';
import type { AppEnv } from './context.ts';
import { isMultipart, readMultipart } from './multipart.ts';
import { decodeBase64 } from '../runtime/base64.ts';
import { invalidRequest, readJsonBody } from './validate.ts';

export interface InputFile {
  path: string;
  filename: string;
  contentType: string;
  bytes: number;
  fileId: string;
}

export interface TaskInput {
  files: InputFile[];
  /** Options: the JSON body less the document fields, or the multipart text fields (JSON values parsed). */
  options: Record<string, unknown>;
  /** Multipart file parts sent in other fields than the document field (e.g. a watermark `logo`), by field name. */
  otherFiles: Record<string, InputFile[]>;
  cleanup(): Promise<void>;
}

const toInput = (f: StoredFile): InputFile => ({
  path: f.path,
  filename: f.filename,
  contentType: f.content_type,
  bytes: Number(f.bytes),
  fileId: f.id,
});

function parseField(value: string): unknown {
  const t = value.trim();
  if (/^(\{|\[|true$|false$|null$|-?\d)/.test(t)) {
    try {
      return JSON.parse(t);
    } catch { /* a plain string */ }
  }
  return value;
}

/** A base64 field's bytes (a data: URL's prefix dropped); 400 when it is not base64. */
export function decodeBase64Field(text: string, field: string): Uint8Array {
  const bytes = decodeBase64(text.startsWith('data:') ? text.slice(text.indexOf(',') + 1) : text);
  if (!bytes) throw invalidRequest(`${field} is not valid base64`, [{ field, message: 'not base64' }]);
  return bytes;
}

export async function readTaskInput(c: Context<AppEnv>, store: FileStore, opts: { fileField?: string } = {}): Promise<TaskInput> {
  const owner = c.get('owner').id;
  const fileField = opts.fileField ?? 'file';
  const created: string[] = [];
  const cleanup = async () => {
    await Promise.all(created.map((id) => store.delete(owner, id).catch(() => {})));
  };

  if (isMultipart(c)) {
    const mp = await readMultipart(c, store, TASK_INPUT);
    created.push(...mp.files.map((f) => f.file.id));
    const options: Record<string, unknown> = {};
    for (const [k, vals] of mp.fields) options[k] = vals.length === 1 ? parseField(vals[0]) : vals.map(parseField);
    const isDoc = (field: string) => field === fileField || field === `${fileField}s` || field === `${fileField}[]`;
    const files = mp.files.filter((f) => isDoc(f.field)).map((f) => toInput(f.file));
    const otherFiles: Record<string, InputFile[]> = {};
    for (const f of mp.files) if (!isDoc(f.field)) (otherFiles[f.field] ??= []).push(toInput(f.file));
    return { files, options, otherFiles, cleanup };
  }

  const body = await readJsonBody(c);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('request body must be a JSON object', [{ field: '(body)', message: 'expected an object' }]);
  }
  const { input_format, file, file_id, file_ids, files, filename, ...options } = body as Record<string, unknown>;
  const format = input_format ?? (file_id !== undefined || file_ids !== undefined ? 'FileIdentifier' : 'Base64EncodedFile');
  if (format !== 'Base64EncodedFile' && format !== 'FileIdentifier') {
    throw invalidRequest('input_format must be Base64EncodedFile or FileIdentifier', [{ field: 'input_format', message: 'unknown value' }]);
  }
  const entries: { value: unknown; filename?: unknown; field: string; format: unknown }[] = [];
  if (file !== undefined) entries.push({ value: file, filename, field: 'file', format });
  if (file_id !== undefined) entries.push({ value: file_id, field: 'file_id', format: 'FileIdentifier' });
  if (Array.isArray(file_ids)) file_ids.forEach((v, i) => entries.push({ value: v, field: `file_ids.${i}`, format: 'FileIdentifier' }));
  if (Array.isArray(files)) {
    files.forEach((f, i) => {
      if (typeof f === 'string') entries.push({ value: f, field: `files.${i}`, format });
      else if (f && typeof f === 'object') {
        const o = f as Record<string, unknown>;
        const fmt = o.input_format ?? (o.file_id !== undefined ? 'FileIdentifier' : format);
        entries.push({ value: o.file_id ?? o.file ?? o.data, filename: o.filename, field: `files.${i}`, format: fmt });
      }
    });
  }
  const out: InputFile[] = [];
  try {
    for (const e of entries) {
      if (typeof e.value !== 'string' || e.value === '') {
        throw invalidRequest(`${e.field} must be a non-empty string`, [{ field: e.field, message: 'expected a string' }]);
      }
      if (e.format === 'FileIdentifier') out.push(toInput(await store.get(owner, e.value)));
      else {
        const saved = await store.saveBytes(owner, decodeBase64Field(e.value, e.field), {
          filename: typeof e.filename === 'string' ? e.filename : 'upload',
          purpose: TASK_INPUT,
        });
        created.push(saved.id);
        out.push(toInput(saved));
      }
    }
  } catch (err) {
    await cleanup();
    throw err;
  }
  return { files: out, options, otherFiles: {}, cleanup };
}

/**
 * Reads the task input and hands it to `admit`, which checks it and returns what the task keeps; when `admit`
 * refuses the request (throws), the uploads it read are removed at once.
 */
export async function admitTaskInput<T>(
  c: Context<AppEnv>,
  store: FileStore,
  admit: (ti: TaskInput) => T | Promise<T>,
): Promise<T> {
  const ti = await readTaskInput(c, store);
  try {
    return await admit(ti);
  } catch (e) {
    await ti.cleanup();
    throw e;
  }
}
