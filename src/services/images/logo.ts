/** A watermark logo: any image format this service reads, checked against the pixel limit, first page, upright. */
import { decodeImage, type Rgba } from './codecs.ts';
import { checkPixels, probeImage } from './probe.ts';

export async function decodeForLogo(bytes: Uint8Array, maxPixels: number): Promise<Rgba> {
  const p = probeImage(bytes);
  checkPixels(p, maxPixels, [0]);
  return (await decodeImage(bytes, p.format, p.pages.length, { pages: [0], maxPixels })).pages[0]!;
}
