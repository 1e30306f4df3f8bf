/** POST /svc/v1/pdf-watermark, /pdf-remove-watermark; GET /svc/v1/pdf-watermark/capabilities. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { watermarkCapabilities } from '../../../services/pdf/lazy.ts';
import { workers } from '../../../services/workers/index.ts';
import { bytesOption, deliverPdf, type PdfRouteDeps, pdfTask, snakeKeys, watermarkFields } from './pdf-task.ts';
import { delivery, pages, password } from '../task-options.ts';

const Watermark = v.object({
  ...watermarkFields,
  pages: v.optional(pages),
  password,
  drop_signatures: v.optional(v.boolean()),
  delivery,
});

const Remove = v.object({ pages: v.optional(pages), password, delivery });

export function pdfWatermarkRoutes(deps: PdfRouteDeps) {
  const app = new Hono<AppEnv>();
  app.get('/pdf-watermark/capabilities', async (c) => c.json(snakeKeys(await watermarkCapabilities())));
  app.post(
    '/pdf-watermark',
    pdfTask(deps, {
      name: 'pdf-watermark',
      options: Watermark,
      async run([doc], o, ctx, input) {
        const logo = await bytesOption(deps, ctx, input, 'logo', o.logo, o.logo_file_id);
        const pdf = await workers.run('pdf.watermark', [doc!, {
          text: o.text,
          logo,
          layout: o.layout,
          corner: o.corner,
          opacity: o.opacity,
          rotation: o.rotation,
          fontSize: o.font_size,
          color: o.color,
          logoWidth: o.logo_width,
          pages: o.pages,
          password: o.password,
          dropSignatures: o.drop_signatures,
        }], ctx);
        return deliverPdf(ctx, o.delivery, input, 'watermarked', pdf);
      },
    }),
  );
  app.post(
    '/pdf-remove-watermark',
    pdfTask(deps, {
      name: 'pdf-remove-watermark',
      options: Remove,
      async run([doc], o, ctx, input) {
        const r = await workers.run('pdf.remove-watermark', [doc!, { pages: o.pages, password: o.password }], ctx);
        return deliverPdf(ctx, o.delivery, input, 'unmarked', r.pdf, { removed: r.removed });
      },
    }),
  );
  return app;
}
