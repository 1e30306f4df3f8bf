/** GET /svc/v1/image-convert/capabilities: formats measured once per process, watermark facts, colour spaces. */
import { loadSharp } from '../../runtime/sharp.ts';
import { measureFormats } from './codecs.ts';
import { CMYK_PROFILE_NAME } from './icc.ts';
import { imageWatermarkCapabilities } from './watermark.ts';

let formats: ReturnType<typeof measureFormats> | undefined;

export async function imageCapabilities(maxPixels: number) {
  formats ??= measureFormats();
  const f = await formats;
  return {
    ...(await imageWatermarkCapabilities()),
    formats_in: f.input,
    formats_out: f.output,
    colour_spaces: ['srgb', 'gray', 'cmyk'],
    cmyk_formats: (await loadSharp()) ? ['jpeg', 'tiff'] : ['tiff'], // CMYK JPEG goes through libvips
    cmyk_profile: CMYK_PROFILE_NAME,
    multi_page_output: ['tiff'],
    max_image_pixels: maxPixels,
  };
}
