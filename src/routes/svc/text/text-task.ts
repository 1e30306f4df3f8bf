/**
 * A text task route: the input is JSON `text`, or one document in any of the three task input forms
 * (multipart `file`, base64 `file`, `file_id`), read to Markdown by the document pipeline (PDF text layer,
 * OCR of scans, DOCX, HTML, ...). Options are validated before admission; the job contract comes from
 * taskHandler.
 */
import { readFile } from 'node:fs/promises';
import type { Handler } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { admitTaskInput, type InputFile } from '../../../http/task-input.ts';
import { taskHandler } from '../../../http/task-route.ts';
import { invalidRequest, validate } from '../../../http/validate.ts';
import { analyseBytes } from '../../../services/documents/lazy.ts';
import { type DocFormat, requireFormat } from '../../../services/documents/detect.ts';
import { ServiceError } from '../../../services/errors.ts';
import type { FileStore } from '../../../services/files/file-store.ts';
import type { TaskContext } from '../../../services/jobs/task.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';

export interface TextRouteDeps {
  runner: TaskRunner;
  files: FileStore;
}

/** The most characters a `text` field may carry (a longer text is uploaded as a document). */
export const MAX_TEXT_CHARS = 2_000_000;

interface TextInput<O> {
  text?: string;
  file?: InputFile;
  format?: DocFormat;
  options: O;
  cleanup(): Promise<void>;
}

export interface TextSource {
  format: DocFormat | 'text';
  characters: number;
  pages?: number;
}

export function textTask<S extends v.GenericSchema>(deps: TextRouteDeps, def: {
  name: string;
  options: S;
  /** Further checks of the options before admission (a bad request never becomes a job). */
  check?(o: v.InferOutput<S>): void;
  run(text: string, o: v.InferOutput<S>, ctx: TaskContext, source: TextSource): Promise<Record<string, unknown>>;
}): Handler<AppEnv> {
  return taskHandler<TextInput<v.InferOutput<S>>>(deps.runner, {
    name: def.name,
    async input(c) {
      return admitTaskInput(c, deps.files, async (ti) => {
        const { text, password, ...rest } = ti.options;
        if (ti.files.length > 1) {
          throw invalidRequest(`${def.name} takes one document (got ${ti.files.length})`, [{ field: 'file', message: 'too many' }]);
        }
        if (ti.files.length === 1 && text !== undefined) {
          throw invalidRequest('give either text or a document, not both', [{ field: 'text', message: 'not with a document' }]);
        }
        if (ti.files.length === 0) {
          if (typeof text !== 'string' || !text.trim()) {
            throw invalidRequest(`${def.name} needs "text" (a non-empty string) or a document ("file" / "file_id")`, [{
              field: 'text',
              message: 'required',
            }]);
          }
          if (text.length > MAX_TEXT_CHARS) {
            throw invalidRequest(`text has ${text.length} characters; the most is ${MAX_TEXT_CHARS} (upload it as a document instead)`, [{
              field: 'text',
              message: 'too long',
            }]);
          }
        }
        const options = validate(def.options, rest);
        def.check?.(options);
        if (ti.files.length === 0) return { text: text as string, options, cleanup: ti.cleanup };
        const file = ti.files[0]!;
        const format = await requireFormat(file.path, undefined, def.name);
        return { file, format, options: Object.assign(options as object, { password }) as typeof options, cleanup: ti.cleanup };
      });
    },
    async run(input, ctx) {
      if (input.text !== undefined) return def.run(input.text, input.options, ctx, { format: 'text', characters: input.text.length });
      const bytes = new Uint8Array(await readFile(input.file!.path));
      const password = (input.options as { password?: unknown }).password;
      const doc = await analyseBytes(bytes, input.format!, {
        ocrScans: true,
        password: typeof password === 'string' ? password : undefined,
        signal: ctx.signal,
        progress: (d, t) => ctx.progress(d, t),
      });
      const text = doc.markdown;
      const source: TextSource = {
        format: input.format!,
        characters: text.length,
        ...(doc.pages.length ? { pages: doc.pages.length } : {}),
      };
      if (!text.trim()) throw new ServiceError(422, 'no_text', `the document has no text to work on (no text layer, and OCR found none)`);
      return def.run(text, input.options, ctx, source);
    },
    cleanup: (input) => input.cleanup(),
  });
}
