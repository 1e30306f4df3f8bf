/**
 * The image utilities (docs/api/images.md): POST /svc/v1/image-analysis, -color-palette, -enhance,
 * -deskew, -normalization, -redact. Same input forms and job contract as every task route.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../../http/context.ts';
import { imageBackgroundRemoval } from '../../../services/images/lazy.ts';
import { workers } from '../../../services/workers/index.ts';
import type { TaskContext } from '../../../services/jobs/task.ts';
import { deliverOne, pdfTask } from '../pdf/pdf-task.ts';
import { delivery, text } from '../task-options.ts';
import { bool, engine, imageName, type ImageRouteDeps, int, num, outputFormat } from './image-task.ts';

const common = { page_index: v.optional(int), engine };
const imageOut = { format: v.optional(outputFormat), quality: v.optional(num), delivery };
type Engine = v.InferOutput<typeof engine>;
type OutputFormat = v.InferOutput<typeof outputFormat>;

interface ImageResult {
  bytes: Uint8Array;
  contentType: string;
  extension: string;
  width: number;
  height: number;
  format: string;
  pageIndex: number;
}

function deliverImage(
  ctx: TaskContext,
  how: 'inline' | 'file_id',
  r: ImageResult,
  input: { filename?: string } | undefined,
  suffix: string,
  extra: Record<string, unknown> = {},
) {
  return deliverOne(ctx, how, {
    bytes: r.bytes,
    contentType: r.contentType,
    filename: imageName(input, r.extension, suffix),
    extra: { width: r.width, height: r.height, format: r.format, page_index: r.pageIndex, ...extra },
  });
}

const Box = v.object({ x: num, y: num, width: num, height: num });

export function imageUtilityRoutes(deps: ImageRouteDeps) {
  const app = new Hono<AppEnv>();
  /** What every utility passes on: the page, the engine, and the pixel limit in force. */
  const page = (o: { page_index?: number; engine?: Engine }) => ({
    pageIndex: o.page_index,
    engine: o.engine,
    maxPixels: deps.config.maxImagePixels,
  });
  /** The same, with the output format and quality of the utilities that return an image. */
  const output = (o: { page_index?: number; engine?: Engine; format?: OutputFormat; quality?: number }) => ({
    ...page(o),
    format: o.format,
    quality: o.quality,
  });

  app.post(
    '/image-analysis',
    pdfTask(deps, {
      name: 'image-analysis',
      options: v.object({ ...common, detect_text: v.optional(bool), language: v.optional(text) }),
      run: ([img], o, ctx) =>
        workers.run('image.analysis', [img!, {
          detectText: o.detect_text,
          language: o.language,
          ...page(o),
        }], ctx),
    }),
  );

  app.post(
    '/image-color-palette',
    pdfTask(deps, {
      name: 'image-color-palette',
      options: v.object({ ...common, count: v.optional(int) }),
      run: ([img], o, ctx) => workers.run('image.palette', [img!, { count: o.count, ...page(o) }], ctx),
    }),
  );

  /**
   * A utility that returns an image: its own options beside the page, engine and output ones; `produce`
   * makes the image, which is delivered inline or as a file named `<input>-<suffix>`.
   */
  const imageTask = <E extends v.ObjectEntries, R extends ImageResult>(
    name: string,
    entries: E,
    suffix: string,
    produce: (
      img: Uint8Array,
      o: v.InferOutput<v.ObjectSchema<typeof common & typeof imageOut & E, undefined>>,
      ctx: TaskContext,
    ) => Promise<R>,
    extra: (r: R) => Record<string, unknown> = () => ({}),
  ) =>
    pdfTask(deps, {
      name,
      options: v.object({ ...common, ...imageOut, ...entries }),
      async run([img], o, ctx, input) {
        const r = await produce(img!, o, ctx);
        // the schema defaults delivery to inline; with generic entries the type checker cannot see the default
        return deliverImage(ctx, o.delivery ?? 'inline', r, input.files[0], suffix, extra(r));
      },
    });

  app.post(
    '/image-enhance',
    imageTask(
      'image-enhance',
      { auto_levels: v.optional(bool), contrast: v.optional(num), denoise: v.optional(int), sharpen: v.optional(num) },
      'enhanced',
      (img, o, ctx) =>
        workers.run('image.enhance', [img, {
          autoLevels: o.auto_levels,
          contrast: o.contrast,
          denoise: o.denoise,
          sharpen: o.sharpen,
          ...output(o),
        }], ctx),
    ),
  );

  app.post(
    '/image-deskew',
    imageTask(
      'image-deskew',
      { detect_orientation: v.optional(bool), background: v.optional(text) },
      'deskewed',
      (img, o, ctx) =>
        workers.run('image.deskew', [img, { detectOrientation: o.detect_orientation, background: o.background, ...output(o) }], ctx),
      (r) => ({ rotation: r.rotation, deskew_angle: r.deskewAngle }),
    ),
  );

  app.post(
    '/image-normalization',
    imageTask(
      'image-normalization',
      {
        max_side: v.optional(int),
        colour_space: v.optional(v.picklist(['srgb', 'gray'])),
        color_space: v.optional(v.picklist(['srgb', 'gray'])),
        deskew: v.optional(bool),
      },
      'normalized',
      (img, o, ctx) =>
        workers.run('image.normalization', [img, {
          maxSide: o.max_side,
          colourSpace: o.colour_space ?? o.color_space,
          format: o.format,
          deskew: o.deskew,
          ...page(o),
        }], ctx),
      (r) => ({ deskew_angle: r.deskewAngle }),
    ),
  );

  app.post(
    '/image-redact',
    imageTask(
      'image-redact',
      {
        boxes: v.optional(v.array(Box)),
        text: v.optional(v.pipe(v.union([text, v.array(text)]), v.transform((x) => (Array.isArray(x) ? x : [x])))),
        color: v.optional(text),
        language: v.optional(text),
      },
      'redacted',
      (img, o, ctx) =>
        workers.run('image.redact', [img, { boxes: o.boxes, text: o.text, color: o.color, language: o.language, ...output(o) }], ctx),
      (r) => ({ boxes: r.boxes, text_matches: r.textMatches }),
    ),
  );

  app.post(
    '/image-background-removal',
    imageTask(
      'image-background-removal',
      { background: v.optional(text) },
      'cutout',
      (img, o) =>
        imageBackgroundRemoval(img, {
          modelDir: deps.config.imageBackgroundModel,
          backend: deps.config.backend,
          threads: deps.config.threads,
          background: o.background,
          ...output(o),
        }),
      (r) => ({ foreground: r.foreground }),
    ),
  );
  return app;
}
