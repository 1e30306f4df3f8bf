/** POST /svc/v1/image-convert, /image-watermark; GET their capabilities (docs/api/images.md). */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { type ConvertResult, imageCapabilities, imageWatermarkCapabilities } from '../../../services/images/lazy.ts';
import { workers } from '../../../services/workers/index.ts';
import type { TaskContext } from '../../../services/jobs/task.ts';
import { deliverMany, pdfTask } from '../pdf/pdf-task.ts';
import { delivery } from '../task-options.ts';
import {
  bool,
  boxOf,
  engine,
  imageName,
  type ImageRouteDeps,
  int,
  num,
  outputFormat,
  Rights,
  size,
  Watermark,
  watermarkFields,
  watermarkOf,
} from './image-task.ts';

const Convert = v.object({
  format: v.optional(outputFormat),
  quality: v.optional(num),
  size,
  width: v.optional(num),
  height: v.optional(num),
  fit: v.optional(v.picklist(['inside', 'fill'])),
  allow_upscale: v.optional(bool),
  colour_space: v.optional(v.picklist(['srgb', 'gray', 'cmyk'])),
  color_space: v.optional(v.picklist(['srgb', 'gray', 'cmyk'])),
  keep_metadata: v.optional(bool),
  page_index: v.optional(int),
  watermark: v.optional(Watermark),
  rights: v.optional(Rights),
  engine,
  delivery,
});

const WatermarkOnly = v.object({ ...watermarkFields, quality: v.optional(num), page_index: v.optional(int), engine, delivery });

/** One output inline (a multi-page result of a single-page format as a zip), or file ids. */
function deliver(ctx: TaskContext, how: 'inline' | 'file_id', r: ConvertResult, input: { filename?: string } | undefined) {
  const many = r.outputs.length > 1;
  const outputs = r.outputs.map((o) => ({
    bytes: o.bytes,
    contentType: r.contentType,
    filename: imageName(input, r.extension, many ? `p${o.page + 1}` : undefined),
    extra: { width: o.width, height: o.height, page_index: o.page, format: r.format },
  }));
  if (how === 'file_id' && !many) return deliverMany(ctx, how, outputs, '').then((x) => (x as { files: unknown[] }).files[0]);
  return deliverMany(ctx, how, outputs, imageName(input, 'zip'), true);
}

export function imageConvertRoutes(deps: ImageRouteDeps) {
  const app = new Hono<AppEnv>();
  const maxPixels = () => deps.config.maxImagePixels;
  app.get('/image-convert/capabilities', async (c) => c.json(await imageCapabilities(maxPixels())));
  app.get('/image-watermark/capabilities', async (c) => c.json(await imageWatermarkCapabilities()));
  app.post(
    '/image-convert',
    pdfTask(deps, {
      name: 'image-convert',
      options: Convert,
      async run([img], o, ctx, input) {
        const r = await workers.run('image.convert', [img!, {
          format: o.format,
          quality: o.quality,
          ...boxOf(o),
          fit: o.fit,
          allowUpscale: o.allow_upscale,
          colourSpace: o.colour_space ?? o.color_space,
          keepMetadata: o.keep_metadata,
          pageIndex: o.page_index,
          watermark: o.watermark ? await watermarkOf(o.watermark, input, ctx, deps) : undefined,
          rights: o.rights,
          engine: o.engine,
          maxPixels: maxPixels(),
        }], ctx);
        return deliver(ctx, o.delivery, r, input.files[0]);
      },
    }),
  );
  app.post(
    '/image-watermark',
    pdfTask(deps, {
      name: 'image-watermark',
      options: WatermarkOnly,
      async run([img], o, ctx, input) {
        const wm = await watermarkOf(o, input, ctx, deps);
        const r = await workers.run('image.watermark', [img!, wm, {
          quality: o.quality,
          pageIndex: o.page_index,
          engine: o.engine,
          maxPixels: maxPixels(),
        }], ctx);
        return deliver(ctx, o.delivery, r, input.files[0]);
      },
    }),
  );
  return app;
}
