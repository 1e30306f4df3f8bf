/** Writes a utility's result image: the format asked for (default the input's, HEIC as JPEG), metadata stripped. */
import { invalidArgument } from '../errors.ts';
import { CONTENT_TYPES, encodeImage, type Engine, EXTENSIONS, OUTPUT_FORMATS, type OutputFormat, type Rgba } from './codecs.ts';
import type { PageOptions } from './load.ts';
import type { ImageFormat } from './probe.ts';
import { encodeTiff } from './tiff.ts';

export interface ImageOutput {
  bytes: Uint8Array;
  format: OutputFormat;
  contentType: string;
  extension: string;
  width: number;
  height: number;
}

/** What every image utility that returns an image takes: its page, and the format and quality it is written in. */
export interface UtilityOutputOptions extends PageOptions {
  format?: OutputFormat;
  quality?: number;
}

export async function writeOutput(
  img: Rgba,
  input: ImageFormat,
  o: { format?: OutputFormat; quality?: number; gray?: boolean; engine?: Engine; needsAlpha?: boolean },
): Promise<ImageOutput> {
  let format = o.format ?? (input === 'heic' ? 'jpeg' : input);
  if (!OUTPUT_FORMATS.includes(format)) throw invalidArgument(`format: one of ${OUTPUT_FORMATS.join(', ')}.`);
  if (o.needsAlpha && !o.format && (format === 'jpeg' || format === 'bmp')) format = 'png'; // keep the transparency asked for
  const bytes = format === 'tiff'
    ? encodeTiff([{ kind: 'rgba', ...img }])
    : await encodeImage(img, format, { quality: o.quality, gray: o.gray, engine: o.engine });
  return { bytes, format, contentType: CONTENT_TYPES[format], extension: EXTENSIONS[format], width: img.width, height: img.height };
}
