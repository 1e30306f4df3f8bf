/**
 * imageConvert: one image (every TIFF page, or the page asked for) to another format, size and colour
 * space, with its metadata kept or stripped, rights written as XMP, and an optional watermark.
 * Pure over bytes and plain options: the pixel limit is checked on the declared size before decoding.
 */
import { capabilityUnavailable, invalidArgument } from '../errors.ts';
import {
  CONTENT_TYPES,
  decodeImage,
  encodeImage,
  type Engine,
  EXTENSIONS,
  isOpaque,
  OUTPUT_FORMATS,
  type OutputFormat,
  type Rgba,
  sharpFor,
  transcodeWithSharp,
} from './codecs.ts';
import { cmykProfile, cmykProfilePath, profileFile, srgbToCmyk } from './icc.ts';
import {
  exifUpright,
  hasRights,
  type ImageMetadata,
  type MetadataBlocks,
  readMetadata,
  type Rights,
  rightsXmp,
  writeMetadata,
} from './metadata.ts';
import { fitSize, grayOf, resize, toGrayRgba } from './pixels.ts';
import { checkPixels, type ImageFormat, probeImage } from './probe.ts';
import { encodeTiff, type TiffPage } from './tiff.ts';
import { burnWatermark, type ImageWatermark, prepareWatermark } from './watermark.ts';
import { readFile } from 'node:fs/promises';

export type ColourSpace = 'srgb' | 'gray' | 'cmyk';

export interface ConvertOptions {
  format?: OutputFormat;
  quality?: number;
  width?: number;
  height?: number;
  /** inside (default): keep the aspect ratio within the box; fill: exactly the box */
  fit?: 'inside' | 'fill';
  allowUpscale?: boolean;
  colourSpace?: ColourSpace;
  keepMetadata?: boolean;
  /** 0-based page of a multi-page TIFF; default every page */
  pageIndex?: number;
  watermark?: ImageWatermark;
  rights?: Rights;
  engine?: Engine;
  /** most pixels a page may declare (and an output page may have) */
  maxPixels: number;
}

export interface ConvertedPage {
  bytes: Uint8Array;
  width: number;
  height: number;
  page: number;
}

export interface ConvertResult {
  format: OutputFormat;
  contentType: string;
  extension: string;
  inputFormat: ImageFormat;
  /** one output (a multi-page TIFF counts as one), or one per page for single-page formats */
  outputs: ConvertedPage[];
  pageCount: number;
}

const defaultOutput = (f: ImageFormat): OutputFormat => (f === 'heic' ? 'jpeg' : f);

let srgbIcc: Promise<Uint8Array> | undefined;
const srgbProfile = () => (srgbIcc ??= readFile(profileFile('srgb.icc')).then((b) => new Uint8Array(b)));

export async function imageConvert(bytes: Uint8Array, o: ConvertOptions): Promise<ConvertResult> {
  const probe = probeImage(bytes);
  const format = o.format ?? defaultOutput(probe.format);
  if (!OUTPUT_FORMATS.includes(format)) throw invalidArgument(`format: one of ${OUTPUT_FORMATS.join(', ')}.`);
  const colour = o.colourSpace ?? 'srgb';
  if (colour === 'cmyk' && format !== 'jpeg' && format !== 'tiff') {
    throw invalidArgument('colour_space cmyk: only JPEG and TIFF carry CMYK.');
  }
  if (hasRights(o.rights) && (format === 'bmp' || format === 'gif')) {
    throw invalidArgument(`rights: ${format.toUpperCase()} has no place for XMP; choose JPEG, PNG, WebP, AVIF or TIFF.`);
  }
  if (o.quality !== undefined && !(o.quality >= 1 && o.quality <= 100)) throw invalidArgument('quality: 1 to 100.');
  const pageCount = probe.pages.length;
  if (o.pageIndex !== undefined && (!Number.isInteger(o.pageIndex) || o.pageIndex < 0 || o.pageIndex >= pageCount)) {
    throw invalidArgument(
      `page_index ${o.pageIndex} is past the last page: the image has ${pageCount} page${pageCount === 1 ? '' : 's'} (0-based).`,
    );
  }
  const pages = o.pageIndex !== undefined ? [o.pageIndex] : [...Array(pageCount).keys()];
  checkPixels(probe, o.maxPixels, pages);
  const wm = o.watermark ? await prepareWatermark(o.watermark) : undefined; // refuse bad text before decoding

  const target = (w: number, h: number) => {
    const size = fitSize(w, h, { width: o.width, height: o.height }, o.fit ?? 'inside', !!o.allowUpscale);
    if (size.width * size.height > o.maxPixels) {
      throw invalidArgument(`the output would have ${size.width}×${size.height} pixels, more than the limit of ${o.maxPixels}.`);
    }
    return size;
  };
  const size = o.width || o.height ? target : undefined;
  // no pixel work of ours (watermark, CMYK, our TIFF/BMP writers): one libvips pipeline, bytes to bytes
  if (
    !wm && colour !== 'cmyk' && format !== 'tiff' && format !== 'bmp' && probe.format !== 'bmp' && probe.format !== 'heic' &&
    (await sharpFor(o.engine ?? 'auto'))
  ) {
    const meta = await metadataFor(await readMetadata(bytes, probe.format), o, colour);
    const outputs: ConvertedPage[] = [];
    for (const p of pages) {
      const r = await transcodeWithSharp(bytes, p, {
        format,
        quality: o.quality,
        gray: colour === 'gray',
        xmp: meta.xmp,
        engine: o.engine,
        maxPixels: o.maxPixels,
        size,
      });
      outputs.push({ bytes: writeMetadata(r.bytes, format, meta), width: r.width, height: r.height, page: p });
    }
    return { format, contentType: CONTENT_TYPES[format], extension: EXTENSIONS[format], inputFormat: probe.format, outputs, pageCount };
  }
  const decoded = await decodeImage(bytes, probe.format, pageCount, { pages, engine: o.engine, maxPixels: o.maxPixels, size });
  const rendered: Rgba[] = [];
  for (const page of decoded.pages) {
    // the sharp path resized while decoding already; the WASM path resizes here
    const size = o.width || o.height
      ? (decoded.resized ? { width: page.width, height: page.height } : target(page.width, page.height))
      : { width: page.width, height: page.height };
    let img = await resize(page, size.width, size.height, o.engine);
    if (wm) img = await burnWatermark(img, wm, o.engine);
    if (colour === 'gray') img = toGrayRgba(img);
    rendered.push(img);
  }
  const meta = await metadataFor(decoded.metadata, o, colour);
  // AVIF metadata is written by libvips only: refuse rather than silently drop the rights
  if (format === 'avif' && meta.xmp && !(await sharpFor(o.engine ?? 'auto'))) {
    throw capabilityUnavailable(
      'writing XMP (rights, kept metadata) into AVIF needs the sharp image library, which this build does not carry; choose JPEG, PNG, WebP or TIFF.',
    );
  }
  const outputs: ConvertedPage[] = [];
  if (format === 'tiff') {
    const tiffPages: TiffPage[] = [];
    for (const img of rendered) {
      if (colour === 'cmyk') tiffPages.push({ kind: 'cmyk', data: await srgbToCmyk(img), width: img.width, height: img.height });
      else if (colour === 'gray' && isOpaque(img)) {
        tiffPages.push({ kind: 'gray', data: grayOf(img), width: img.width, height: img.height });
      } else tiffPages.push({ kind: 'rgba', ...img }); // RGBA pages; an opaque one costs a constant alpha plane, deflated to almost nothing
    }
    outputs.push({
      bytes: encodeTiff(tiffPages, { xmp: meta.xmp, icc: meta.icc }),
      width: rendered[0]!.width,
      height: rendered[0]!.height,
      page: pages[0]!,
    });
  } else {
    for (let i = 0; i < rendered.length; i++) {
      const img = rendered[i]!;
      let out: Uint8Array;
      if (colour === 'cmyk') out = await cmykJpeg(img, o);
      else out = await encodeImage(img, format, { quality: o.quality, gray: colour === 'gray', engine: o.engine, xmp: meta.xmp });
      out = writeMetadata(out, format, meta);
      outputs.push({ bytes: out, width: img.width, height: img.height, page: pages[i]! });
    }
  }
  return { format, contentType: CONTENT_TYPES[format], extension: EXTENSIONS[format], inputFormat: probe.format, outputs, pageCount };
}

/** The blocks the output carries: rights always; EXIF/XMP/ICC of the input only with keep_metadata. */
async function metadataFor(input: ImageMetadata, o: ConvertOptions, colour: ColourSpace): Promise<MetadataBlocks> {
  const m: MetadataBlocks = {};
  if (o.keepMetadata) {
    if (input.exif) m.exif = exifUpright(input.exif); // the pixels were turned upright already
    if (input.xmp) m.xmp = input.xmp;
    // the pixels are sRGB now: an input profile is replaced by the sRGB profile, never copied as is
    if (input.icc && colour === 'srgb') m.icc = await srgbProfile();
  }
  if (hasRights(o.rights)) m.xmp = rightsXmp(o.rights!);
  if (colour === 'cmyk') m.icc = await cmykProfile();
  return m;
}

/**
 * CMYK JPEG: the JPEG encoders take RGB, so libvips converts through the same shipped profile (with its
 * own Little CMS); without sharp, CMYK is written as TIFF through lcms-wasm.
 */
async function cmykJpeg(img: Rgba, o: ConvertOptions): Promise<Uint8Array> {
  const sharp = await sharpFor(o.engine ?? 'auto');
  if (!sharp) {
    throw capabilityUnavailable(
      'colour_space cmyk as JPEG needs the sharp image library, which this build does not carry; ask for format tiff.',
    );
  }
  const out = await sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } })
    .flatten({ background: '#ffffff' }).toColourspace('cmyk').withIccProfile(cmykProfilePath()).jpeg({
      quality: Math.round(o.quality ?? 85),
    }).toBuffer();
  return new Uint8Array(out);
}
