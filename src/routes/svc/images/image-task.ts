/**
 * What the image task routes share with the PDF ones (three input forms, valibot options, delivery), plus
 * the image options every route names the same way: the watermark object, rights, size, engine.
 */
import * as v from 'valibot';
import { invalidRequest } from '../../../http/validate.ts';
import type { FileStore } from '../../../services/files/file-store.ts';
import type { TaskRunner } from '../../../services/jobs/task-runner.ts';
import type { TaskContext } from '../../../services/jobs/task.ts';
import { workers } from '../../../services/workers/index.ts';
import { baseName, bytesOption, type PdfTaskInput, watermarkFields } from '../pdf/pdf-task.ts';
import { text } from '../task-options.ts';

export { watermarkFields };

export interface ImageRouteDeps {
  runner: TaskRunner;
  files: FileStore;
  config: { maxImagePixels: number; imageBackgroundModel: string; backend: 'auto' | 'cpu' | 'wasm' | 'webgpu' | 'cuda'; threads: number };
}

export const num = v.number();
export const int = v.pipe(v.number(), v.integer());
export const bool = v.boolean();
export const engine = v.optional(v.picklist(['auto', 'sharp', 'wasm']));

const formatAliases: Record<string, string> = { jpg: 'jpeg', tif: 'tiff' };
export const outputFormat = v.pipe(
  v.string(),
  v.transform((s) => formatAliases[s.toLowerCase()] ?? s.toLowerCase()),
  v.picklist(['jpeg', 'png', 'webp', 'avif', 'tiff', 'gif', 'bmp']),
);

export const Watermark = v.object(watermarkFields);
export type WatermarkInput = v.InferOutput<typeof Watermark>;

export const Rights = v.object({
  notice: v.optional(text),
  creator: v.optional(text),
  credit_line: v.optional(text),
  usage_terms: v.optional(text),
  rights_page: v.optional(text),
});

/** `size`: a longest edge (number), "WxH", or {width, height}; `width`/`height` may also be given alone. */
export const size = v.optional(v.union([num, v.string(), v.object({ width: v.optional(num), height: v.optional(num) })]));

export function boxOf(
  o: { size?: number | string | { width?: number; height?: number }; width?: number; height?: number },
): { width?: number; height?: number } {
  let box: { width?: number; height?: number } = { width: o.width, height: o.height };
  if (typeof o.size === 'number') box = { width: o.size, height: o.size };
  else if (typeof o.size === 'string') {
    const m = /^\s*(\d+)?\s*[x×]\s*(\d+)?\s*$/i.exec(o.size) ?? (/^\s*(\d+)\s*$/.exec(o.size) ? [o.size, o.size, o.size] : null);
    if (!m) {
      throw invalidRequest('size: a number (longest edge), "WxH", "Wx", "xH" or {width, height}', [{
        field: 'size',
        message: 'unreadable',
      }]);
    }
    box = { width: m[1] ? Number(m[1]) : undefined, height: m[2] ? Number(m[2]) : undefined };
  } else if (o.size) box = o.size;
  for (const [k, x] of Object.entries(box)) {
    if (x !== undefined && !(Number.isInteger(x) && x >= 1 && x <= 1_000_000)) {
      throw invalidRequest(`size ${k}: a whole number of pixels, at least 1`, [{ field: 'size', message: 'out of range' }]);
    }
  }
  return box;
}

/** The watermark in service terms; the logo read from a multipart part, base64 or a file id, and decoded. */
export async function watermarkOf(w: WatermarkInput, input: PdfTaskInput<unknown>, ctx: TaskContext, deps: ImageRouteDeps) {
  const bytes = await bytesOption(deps, ctx, input, 'logo', w.logo, w.logo_file_id);
  return {
    text: w.text,
    logo: bytes ? await workers.run('image.logo', [bytes, deps.config.maxImagePixels], ctx) : undefined,
    layout: w.layout,
    corner: w.corner,
    opacity: w.opacity,
    rotation: w.rotation,
    fontSize: w.font_size,
    color: w.color,
    logoWidth: w.logo_width,
  };
}

/** Name of an output derived from the input's: photo.heic → photo.jpg, scan.tif page 2 → scan-p2.png. */
export function imageName(input: { filename?: string } | undefined, ext: string, suffix?: string): string {
  return `${baseName(input, 'image')}${suffix ? `-${suffix}` : ''}.${ext}`;
}
