/**
 * imageBackgroundRemoval: a matting/segmentation model (MODNet, ISNet, BiRefNet layouts: one image in,
 * one matte out) run through transformers.js's background-removal pipeline on ONNX Runtime; the matte
 * becomes the alpha channel, or the cut-out is laid on a chosen colour.
 * The model is a local hub-layout directory (setting imageBackgroundModel; docs/api/images.md names a
 * licence-clean choice). It is loaded once per directory and kept for the process.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { capabilityUnavailable, invalidArgument } from '../errors.ts';
import { type BackendSetting, firstLine, initBackend, sessionPlacement } from '../inference/backend.ts';
import type { Rgba } from './codecs.ts';
import { loadPage } from './load.ts';
import { type UtilityOutputOptions, writeOutput } from './output.ts';
import { parseColor } from './watermark.ts';
import { localFilesOnly } from '../inference/local-files.ts';

// deno-lint-ignore no-explicit-any
type Pipe = (image: unknown) => Promise<any>;
const pipes = new Map<
  string,
  Promise<{ run: Pipe; tf: { RawImage: new (d: Uint8ClampedArray, w: number, h: number, c: number) => unknown } }>
>();

async function pipelineFor(dirIn: string, backend: BackendSetting, threads: number) {
  const dir = resolve(dirIn);
  let p = pipes.get(dir);
  if (!p) {
    p = (async () => {
      try {
        if (!(await stat(`${dir}/config.json`)).isFile()) throw new Error('no config.json');
      } catch {
        throw capabilityUnavailable(`the background-removal model directory ${dirIn} is missing or has no config.json`);
      }
      const rt = await initBackend(backend, { threads });
      localFilesOnly(rt.tf.env);
      const errors: string[] = [];
      for (const d of rt.devices) {
        try {
          const run =
            (await rt.tf.pipeline('background-removal', dir, { dtype: 'fp32', ...sessionPlacement(rt, d) } as never)) as unknown as Pipe;
          return { run, tf: rt.tf as never };
        } catch (e) {
          errors.push(`${d}: ${firstLine(e)}`);
        }
      }
      throw capabilityUnavailable(`the background-removal model in ${dirIn} does not load: ${errors.join('; ')}`);
    })();
    pipes.set(dir, p);
    p.catch(() => pipes.delete(dir));
  }
  return p;
}

export interface BackgroundOptions extends UtilityOutputOptions {
  /** model directory (hub layout); empty: not configured */
  modelDir: string;
  backend?: BackendSetting;
  threads?: number;
  /** lay the cut-out on this colour (#rrggbb) instead of transparency */
  background?: string;
  /** png (default) or webp keep the alpha; with a background colour any format */
  format?: UtilityOutputOptions['format'];
}

export async function imageBackgroundRemoval(bytes: Uint8Array, o: BackgroundOptions) {
  if (!o.modelDir) {
    throw capabilityUnavailable(
      'no background-removal model is configured (setting imageBackgroundModel: a local MODNet/ISNet/BiRefNet ONNX directory)',
    );
  }
  const bg = o.background ? parseColor(o.background) : undefined;
  if (!bg && o.format && !['png', 'webp', 'tiff', 'avif'].includes(o.format)) {
    throw invalidArgument(`format ${o.format} has no alpha channel: choose png, webp, tiff or avif, or give a background colour.`);
  }
  const page = await loadPage(bytes, o);
  const { run, tf } = await pipelineFor(o.modelDir, o.backend ?? 'auto', o.threads ?? 1);
  const out = await run(new tf.RawImage(new Uint8ClampedArray(page.img.data), page.img.width, page.img.height, 4));
  const cut: Rgba = { data: new Uint8ClampedArray(out.data), width: out.width, height: out.height };
  let alphaSum = 0;
  for (let i = 3; i < cut.data.length; i += 4) alphaSum += cut.data[i]!;
  if (bg) {
    for (let i = 0; i < cut.data.length; i += 4) {
      const a = cut.data[i + 3]! / 255;
      for (let k = 0; k < 3; k++) cut.data[i + k] = cut.data[i + k]! * a + bg[k]! * (1 - a);
      cut.data[i + 3] = 255;
    }
  }
  const written = await writeOutput(cut, page.format, {
    format: o.format ?? (bg ? undefined : 'png'),
    quality: o.quality,
    engine: o.engine,
    needsAlpha: !bg,
  });
  return { ...written, pageIndex: page.pageIndex, foreground: Math.round((alphaSum / 255 / (cut.width * cut.height)) * 10000) / 10000 };
}
