/** POST /svc/v1/pdf-to-pdfa, /pdf-pdfa-check, /pdf-ocr (docs/api/pdf-trust.md). */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { workers } from '../../../services/workers/index.ts';
import { deliverPdf, type PdfRouteDeps, pdfTask, snakeKeys } from './pdf-task.ts';
import { delivery, pages, password, text } from '../task-options.ts';

const ToPdfa = v.object({ level: v.optional(v.picklist(['2b', '3b', '2B', '3B'])), password, delivery });
const Check = v.object({ password });
const Ocr = v.object({
  pages: v.optional(pages),
  force: v.optional(v.boolean()),
  engine: v.optional(v.picklist(['auto', 'tesseract', 'paddle'])),
  language: v.optional(text),
  dpi: v.optional(v.pipe(v.number(), v.integer(), v.minValue(72), v.maxValue(600))),
  password,
  delivery,
});

export function pdfArchiveRoutes(deps: PdfRouteDeps) {
  const app = new Hono<AppEnv>();
  app.post(
    '/pdf-to-pdfa',
    pdfTask(deps, {
      name: 'pdf-to-pdfa',
      options: ToPdfa,
      async run([doc], o, ctx, input) {
        const r = await workers.run('pdf.to-pdfa', [doc!, {
          level: o.level?.toLowerCase() as '2b' | '3b' | undefined,
          password: o.password,
        }], ctx);
        return deliverPdf(ctx, o.delivery, input, 'pdfa', r.pdf, snakeKeys({ changes: r.changes, check: r.check }));
      },
    }),
  );
  app.post(
    '/pdf-pdfa-check',
    pdfTask(deps, {
      name: 'pdf-pdfa-check',
      options: Check,
      run: async ([doc], o, ctx) => snakeKeys(await workers.run('pdf.pdfa-check', [doc!, { password: o.password }], ctx)),
    }),
  );
  app.post(
    '/pdf-ocr',
    pdfTask(deps, {
      name: 'pdf-ocr',
      options: Ocr,
      async run([doc], o, ctx, input) {
        const r = await workers.run('pdf.ocr', [doc!, {
          pages: o.pages,
          force: o.force,
          engine: o.engine,
          language: o.language,
          dpi: o.dpi,
          password: o.password,
        }], ctx);
        return deliverPdf(ctx, o.delivery, input, 'ocr', r.pdf, { pages: r.pages });
      },
    }),
  );
  return app;
}
