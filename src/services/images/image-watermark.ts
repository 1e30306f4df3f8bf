/**
 * imageWatermark: the mark burned in, keeping the image's size, format, pages and metadata (EXIF, XMP,
 * ICC as sRGB). A format this build cannot write back (HEIC) comes out as JPEG.
 */
import type { PageOptions } from './load.ts';
import { imageConvert } from './convert.ts';
import type { ImageWatermark } from './watermark.ts';

export async function imageWatermark(
  bytes: Uint8Array,
  watermark: ImageWatermark,
  o: PageOptions & { quality?: number },
) {
  return imageConvert(bytes, {
    watermark,
    keepMetadata: true,
    quality: o.quality ?? 92,
    pageIndex: o.pageIndex,
    engine: o.engine,
    maxPixels: o.maxPixels,
  });
}
