/**
 * Document routes (docs/api/documents.md): OCR, document to Markdown, document parsing, split, validate,
 * thumbnails, highlight. Every one is a task route (job contract) taking one document in any of the
 * three input forms; the format is detected from the bytes (415 unsupported_file_type otherwise).
 */
import { readFile } from 'node:fs/promises';
import { type Handler, Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { admitTaskInput, type InputFile } from '../../../http/task-input.ts';
import { taskHandler } from '../../../http/task-route.ts';
import { invalidRequest, validate } from '../../../http/validate.ts';
import { detectFile, type DocFormat, isImage, MIME, requireFormat } from '../../../services/documents/detect.ts';
import { elementsToDocTags, elementsToHtml } from '../../../services/documents/elements.ts';
import type { AnalyseOptions } from '../../../services/documents/analyse.ts';
import { splitElements } from '../../../services/documents/split.ts';
import type { FileStore } from '../../../services/files/file-store.ts';
import { BinaryResult, type TaskContext } from '../../../services/jobs/task.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';
import { workers } from '../../../services/workers/index.ts';
import { checkFieldLengths } from '../../../services/limits.ts';
import { baseName } from '../pdf/pdf-task.ts';
import { int, oneOf, pages as pageSelection, password, text } from '../task-options.ts';

export interface DocumentRouteDeps {
  runner: TaskRunner;
  files: FileStore;
}

const pages = v.optional(pageSelection);
const engine = v.optional(v.picklist(['auto', 'tesseract', 'paddle']), 'auto');

interface DocInput<O> {
  file: InputFile;
  format?: DocFormat | null;
  options: O;
  cleanup(): Promise<void>;
}

/** One document, options validated, format detected (415 unless `anyFormat`). */
function docTask<S extends v.GenericSchema>(deps: DocumentRouteDeps, def: {
  name: string;
  options: S;
  formats?: ReadonlySet<DocFormat>;
  anyFormat?: boolean;
  run(bytes: Uint8Array, format: DocFormat, o: v.InferOutput<S>, ctx: TaskContext, input: DocInput<v.InferOutput<S>>): Promise<unknown>;
}): Handler<AppEnv> {
  return taskHandler<DocInput<v.InferOutput<S>>>(deps.runner, {
    name: def.name,
    async input(c) {
      return admitTaskInput(c, deps.files, (ti) => {
        if (ti.files.length !== 1) {
          throw invalidRequest(
            `${def.name} takes one document (got ${ti.files.length}): multipart field "file", or "file"/"file_id" in JSON`,
            [{ field: 'file', message: ti.files.length ? 'too many' : 'required' }],
          );
        }
        const options = validate(def.options, ti.options);
        checkFieldLengths(options);
        return { file: ti.files[0]!, options, cleanup: ti.cleanup };
      });
    },
    async run(input, ctx) {
      // Detected here, not at admission: with Prefer: respond-async the 202 comes before any work, and a
      // 415 is then the job's outcome, classified as it would be synchronously.
      const file = input.file;
      input.format = def.anyFormat ? await detectFile(file.path) : await requireFormat(file.path, def.formats, def.name);
      const bytes = new Uint8Array(await readFile(file.path));
      return def.run(bytes, input.format as DocFormat, input.options, ctx, input);
    },
    cleanup: (input) => input.cleanup(),
  });
}

const OCR_FORMATS: ReadonlySet<DocFormat> = new Set(['pdf', 'png', 'jpeg', 'webp', 'tiff', 'avif', 'gif', 'bmp']);

const Ocr = v.object({
  engine,
  language: v.optional(text, 'eng'),
  pages,
  password,
  dpi: v.optional(int(72, 600), 300),
  detect_orientation: v.optional(v.boolean(), true),
  deskew: v.optional(v.boolean(), true),
  include_words: v.optional(v.boolean(), true),
});
const ToMarkdown = v.object({ pages, password, engine, language: v.optional(text, 'eng') });
const Parse = v.object({
  effort: oneOf(['Low', 'Medium', 'High'] as const, 'Medium'),
  pages,
  password,
  output_format: oneOf(['Json', 'Markdown', 'Html', 'DocLang'] as const, 'Json'),
  include_figure_images: v.optional(v.boolean(), false),
  engine,
  language: v.optional(text, 'eng'),
});
const Split = v.object({
  strategy: oneOf(['pages', 'headings', 'tokens'] as const, 'tokens'),
  max_tokens: v.optional(int(16, 100_000)),
  overlap: v.optional(int(0, 50_000)),
  pages_per_chunk: v.optional(int(1, 10_000)),
  pages,
  password,
  engine,
});
const Validate = v.object({ password, content_type: v.optional(text) });
const Thumbs = v.object({
  pages,
  size: v.optional(int(16, 2048), 256),
  format: oneOf(['png', 'webp'] as const, 'png'),
  password,
});
const Highlight = v.object({
  query: v.pipe(text, v.minLength(1, 'query is required')),
  regex: v.optional(v.boolean(), false),
  case_sensitive: v.optional(v.boolean(), false),
  pages,
  password,
  context_chars: v.optional(int(0, 2000), 80),
  limit: v.optional(int(1, 100_000), 1000),
  output_format: oneOf(['Json', 'Pdf'] as const, 'Json'),
  engine,
  ocr: v.optional(v.boolean(), true),
});

/**
 * The document analysis every document task starts from, in the worker pool: the page range, password,
 * OCR engine and language as the request gives them; scanned pages OCRed unless `more` says otherwise.
 */
const analyse = (
  bytes: Uint8Array,
  format: DocFormat,
  o: Pick<AnalyseOptions, 'pages' | 'password' | 'engine' | 'language'>,
  ctx: TaskContext,
  more: Pick<AnalyseOptions, 'effort' | 'ocrScans' | 'includeFigureImages'> = {},
) =>
  workers.run('document.analyse', [bytes, format, {
    pages: o.pages,
    password: o.password,
    engine: o.engine,
    language: o.language,
    ocrScans: true,
    ...more,
  }], ctx);

export function documentRoutes(deps: DocumentRouteDeps) {
  const app = new Hono<AppEnv>();

  app.post(
    '/ocr',
    docTask(deps, {
      name: 'ocr',
      options: Ocr,
      formats: OCR_FORMATS,
      async run(bytes, format, o, ctx) {
        const result = await workers.run('ocr.recognize', [bytes, format === 'pdf' ? 'pdf' : 'image', {
          engine: o.engine,
          language: o.language,
          pages: o.pages,
          password: o.password,
          dpi: o.dpi,
          detectOrientation: o.detect_orientation,
          deskew: o.deskew,
        }], ctx);
        const out = o.include_words ? result : result.map((p) => ({ ...p, lines: p.lines.map(({ words: _w, ...l }) => l) }));
        return { format, engine: result[0]?.engine ?? null, text: result.map((p) => p.text).join('\n\n'), pages: out };
      },
    }),
  );

  app.post(
    '/document-to-markdown',
    docTask(deps, {
      name: 'document-to-markdown',
      options: ToMarkdown,
      async run(bytes, format, o, ctx) {
        const r = await analyse(bytes, format, o, ctx);
        return { format, markdown: r.markdown, page_count: r.pages.length || null, ocr_pages: r.ocrPages };
      },
    }),
  );

  app.post(
    '/document-parsing',
    docTask(deps, {
      name: 'document-parsing',
      options: Parse,
      async run(bytes, format, o, ctx, input) {
        const r = await analyse(bytes, format, o, ctx, {
          effort: o.effort,
          ocrScans: isImage(format) || o.effort === 'High',
          includeFigureImages: o.include_figure_images,
        });
        const name = baseName(input.file);
        switch (o.output_format) {
          case 'Markdown':
            return new BinaryResult(new TextEncoder().encode(r.markdown), 'text/markdown; charset=utf-8', `${name}.md`);
          case 'Html':
            return new BinaryResult(new TextEncoder().encode(elementsToHtml(r.elements, name)), 'text/html; charset=utf-8', `${name}.html`);
          case 'DocLang':
            return new BinaryResult(
              new TextEncoder().encode(elementsToDocTags(r.elements, r.pages)),
              'application/vnd.docling.doctags+xml; charset=utf-8',
              `${name}.doctags.txt`,
            );
          default:
            return {
              format,
              effort: o.effort,
              unit: isImage(format) ? 'px' : 'pt',
              origin: 'top-left',
              pages: r.pages,
              elements: r.elements,
            };
        }
      },
    }),
  );

  app.post(
    '/document-split',
    docTask(deps, {
      name: 'document-split',
      options: Split,
      async run(bytes, format, o, ctx) {
        const r = await analyse(bytes, format, o, ctx);
        const chunks = splitElements(r.elements, {
          strategy: o.strategy,
          maxTokens: o.max_tokens,
          overlap: o.overlap,
          pagesPerChunk: o.pages_per_chunk,
        });
        return { format, strategy: o.strategy, chunk_count: chunks.length, chunks };
      },
    }),
  );

  app.post(
    '/document-validate',
    docTask(deps, {
      name: 'document-validate',
      options: Validate,
      anyFormat: true,
      async run(bytes, _format, o, ctx, input) {
        const report = await workers.run('document.validate', [bytes, {
          filename: input.file.filename,
          contentType: o.content_type ?? (input.file.contentType !== 'application/octet-stream' ? input.file.contentType : undefined),
          password: o.password,
        }], ctx);
        ctx.progress(1, 1);
        return report;
      },
    }),
  );

  app.post(
    '/document-thumbnails',
    docTask(deps, {
      name: 'document-thumbnails',
      options: Thumbs,
      async run(bytes, format, o, ctx, input) {
        const thumbs = await workers.run('document.thumbnails', [bytes, format, {
          pages: o.pages,
          size: o.size,
          format: o.format,
          password: o.password,
        }], ctx);
        ctx.progress(thumbs.length, thumbs.length);
        if (o.pages === undefined && thumbs.length === 1) {
          return new BinaryResult(thumbs[0]!.bytes, thumbs[0]!.mime_type, `${baseName(input.file)}-thumbnail.${o.format}`);
        }
        return {
          format,
          thumbnails: thumbs.map((t) => ({
            page: t.page,
            width: t.width,
            height: t.height,
            mime_type: t.mime_type,
            data: Buffer.from(t.bytes).toString('base64'),
          })),
        };
      },
    }),
  );

  app.post(
    '/document-highlight',
    docTask(deps, {
      name: 'document-highlight',
      options: Highlight,
      async run(bytes, format, o, ctx, input) {
        if (o.output_format === 'Pdf' && format !== 'pdf') {
          throw invalidRequest(`output_format Pdf needs a PDF input (this is ${MIME[format]})`, [{
            field: 'output_format',
            message: 'PDF inputs only',
          }]);
        }
        const r = await workers.run('document.highlight', [bytes, format, {
          query: o.query,
          regex: o.regex,
          caseSensitive: o.case_sensitive,
          pages: o.pages,
          password: o.password,
          context: o.context_chars,
          limit: o.limit,
          engine: o.engine,
          ocr: o.ocr,
          returnPdf: o.output_format === 'Pdf',
        }], ctx);
        if (r.pdf) return new BinaryResult(r.pdf, 'application/pdf', `${baseName(input.file)}-highlighted.pdf`);
        return { format, query: r.query, match_count: r.matches.length, truncated: r.truncated, matches: r.matches };
      },
    }),
  );

  return app;
}
