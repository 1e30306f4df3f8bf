/** POST /svc/v1/pdf-watermark, /pdf-remove-watermark; GET /svc/v1/pdf-watermark/capabilities. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { invalidRequest } from '../../../http/validate.ts';
import { watermarkCapabilities } from '../../../services/pdf/lazy.ts';
import { workers } from '../../../services/workers/index.ts';
import { decodeBase64Option, deliverPdf, type PdfRouteDeps, pdfTask, readInput, snakeKeys, watermarkFields } from './pdf-task.ts';
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
        const part = input.otherFiles.logo?.[0];
        if ([part, o.logo, o.logo_file_id].filter((x) => x !== undefined).length > 1) {
          throw invalidRequest('give the logo once: a "logo" file part, "logo" in base64, or "logo_file_id"', [{
            field: 'logo',
            message: 'given more than once',
          }]);
        }
        let logo: Uint8Array | undefined;
        if (part) logo = await readInput(part);
        else if (o.logo !== undefined) logo = decodeBase64Option(o.logo, 'logo');
        else if (o.logo_file_id !== undefined) logo = await readInput(await deps.files.get(ctx.owner.id, o.logo_file_id));
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
