/** POST /svc/v1/pdf-to-images, /image-to-pdf: pages to pictures and pictures to pages. */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { type ImageToPdfOptions, numberedNames } from '../../../services/pdf/lazy.ts';
import { workers } from '../../../services/workers/index.ts';
import { baseName, deliverMany, deliverOne, outName, type PdfRouteDeps, pdfTask } from './pdf-task.ts';
import { delivery, pages, password, text } from '../task-options.ts';

const ToImages = v.object({
  pages: v.optional(pages),
  format: v.optional(v.picklist(['png', 'jpeg', 'webp']), 'png'),
  dpi: v.optional(v.pipe(v.number(), v.minValue(10), v.maxValue(1200)), 150),
  quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100))),
  password,
  delivery,
});

const ImageToPdf = v.object({
  page_size: v.optional(text, 'fit'),
  margin: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(500))),
  orientation: v.optional(v.picklist(['auto', 'portrait', 'landscape']), 'auto'),
  delivery,
});

export function pdfRenderRoutes(deps: PdfRouteDeps) {
  const app = new Hono<AppEnv>();
  app.post(
    '/pdf-to-images',
    pdfTask(deps, {
      name: 'pdf-to-images',
      options: ToImages,
      async run([doc], o, ctx, input) {
        const images = await workers.run('pdf.render', [doc!, {
          pages: o.pages,
          format: o.format,
          dpi: o.dpi,
          quality: o.quality,
          password: o.password,
        }], ctx);
        ctx.progress(images.length, images.length);
        const ext = o.format === 'jpeg' ? 'jpg' : o.format;
        const names = numberedNames(images.length, `${baseName(input.files[0])}-page`, ext, images.map((i) => i.page));
        const outputs = images.map((img, k) => ({
          bytes: img.bytes,
          filename: names[k]!,
          contentType: img.mimeType,
          extra: { page: img.page, width: img.width, height: img.height },
        }));
        return deliverMany(ctx, o.delivery, outputs, outName(input.files[0], 'pages', 'zip'), true);
      },
    }),
  );
  app.post(
    '/image-to-pdf',
    pdfTask(deps, {
      name: 'image-to-pdf',
      options: ImageToPdf,
      files: { min: 1, max: 100 },
      async run(images, o, ctx, input) {
        const pdf = await workers.run('pdf.from-images', [images.map((bytes) => ({ bytes })), {
          pageSize: o.page_size as ImageToPdfOptions['pageSize'],
          margin: o.margin,
          orientation: o.orientation,
        }], ctx);
        ctx.progress(images.length, images.length);
        return deliverOne(ctx, o.delivery, { bytes: pdf, filename: `${baseName(input.files[0])}.pdf`, contentType: 'application/pdf' });
      },
    }),
  );
  return app;
}
