/** One page of an image, decoded after the pixel limit was checked on its header: the start of every image utility. */
import { invalidArgument } from '../errors.ts';
import { decodeImage, type Engine, type Rgba } from './codecs.ts';
import type { ImageMetadata } from './metadata.ts';
import { checkPixels, type ImageFormat, probeImage } from './probe.ts';

export interface LoadedPage {
  img: Rgba;
  format: ImageFormat;
  pageCount: number;
  pageIndex: number;
  metadata: ImageMetadata;
}

/** What every image utility takes to load its page. */
export interface PageOptions {
  /** 0-based page of a multi-page image (default the first) */
  pageIndex?: number;
  engine?: Engine;
  /** most pixels a page may declare */
  maxPixels: number;
}

export async function loadPage(bytes: Uint8Array, o: PageOptions): Promise<LoadedPage> {
  const p = probeImage(bytes);
  const pageIndex = o.pageIndex ?? 0;
  if (!Number.isInteger(pageIndex) || pageIndex < 0 || pageIndex >= p.pages.length) {
    throw invalidArgument(
      `page_index ${pageIndex} is past the last page: the image has ${p.pages.length} page${p.pages.length === 1 ? '' : 's'} (0-based).`,
    );
  }
  checkPixels(p, o.maxPixels, [pageIndex]);
  const d = await decodeImage(bytes, p.format, p.pages.length, { pages: [pageIndex], maxPixels: o.maxPixels, engine: o.engine });
  return { img: d.pages[0]!, format: p.format, pageCount: p.pages.length, pageIndex, metadata: d.metadata };
}
