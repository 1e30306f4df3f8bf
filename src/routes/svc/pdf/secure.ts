/** POST /svc/v1/pdf-unlock, /pdf-redact: decrypt a document; remove text and image areas from it. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { workers } from '../../../services/workers/index.ts';
import { deliverPdf, type PdfRouteDeps, pdfTask } from './pdf-task.ts';
import { delivery, pages, password, strings } from '../task-options.ts';

const Unlock = v.object({ password, delivery });

const num = v.number();
const rect = v.object({ page: v.pipe(num, v.integer()), x: num, y: num, width: num, height: num });
const Redact = v.object({
  texts: v.optional(strings),
  regex: v.optional(strings),
  case_sensitive: v.optional(v.boolean(), false),
  rects: v.optional(v.union([v.array(rect), v.pipe(rect, v.transform((r) => [r]))])),
  pages: v.optional(pages),
  flatten: v.optional(v.boolean(), false),
  flatten_dpi: v.optional(v.pipe(num, v.minValue(36), v.maxValue(600))),
  password,
  drop_signatures: v.optional(v.boolean()),
  delivery,
});

export function pdfSecureRoutes(deps: PdfRouteDeps) {
  const app = new Hono<AppEnv>();
  app.post(
    '/pdf-unlock',
    pdfTask(deps, {
      name: 'pdf-unlock',
      options: Unlock,
      async run([doc], o, ctx, input) {
        const r = await workers.run('pdf.unlock', [doc!, { password: o.password }], ctx);
        return deliverPdf(ctx, o.delivery, input, 'unlocked', r.pdf, { was_encrypted: r.wasEncrypted });
      },
    }),
  );
  app.post(
    '/pdf-redact',
    pdfTask(deps, {
      name: 'pdf-redact',
      options: Redact,
      async run([doc], o, ctx, input) {
        const r = await workers.run('pdf.redact', [doc!, {
          texts: o.texts,
          regex: o.regex,
          caseSensitive: o.case_sensitive,
          rects: o.rects,
          pages: o.pages,
          flatten: o.flatten,
          flattenDpi: o.flatten_dpi,
          password: o.password,
          dropSignatures: o.drop_signatures,
        }], ctx);
        ctx.progress(r.redactions.length, r.redactions.length);
        return deliverPdf(ctx, o.delivery, input, 'redacted', r.pdf, { redactions: r.redactions, signatures_dropped: r.signaturesDropped });
      },
    }),
  );
  return app;
}
