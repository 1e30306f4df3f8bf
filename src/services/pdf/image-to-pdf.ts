/**
 * imageToPdf: images (JPEG, PNG, WebP, TIFF with every page, AVIF) to one PDF, one image per page.
 * JPEG bytes are embedded as they are (DCTDecode, no re-encoding); PNG through pdf-lib; the other
 * formats are decoded to RGBA and stored losslessly (Flate, alpha as an SMask).
 */
import {
  concatTransformationMatrix,
  drawObject,
  PageSizes,
  PDFDocument,
  PDFName,
  type PDFRef,
  popGraphicsState,
  pushGraphicsState,
} from '@cantoo/pdf-lib';
import { invalidArgument, ServiceError } from '../errors.ts';
import { decodeFrames, sniffImage } from './decode-image.ts';
import type { Rgba } from './encode-image.ts';

export type PaperSize = 'fit' | keyof typeof PageSizes;

export interface ImageToPdfOptions {
  /** fit: the page takes the image's size (1 px = 1 pt) plus margins; default fit */
  pageSize?: PaperSize;
  /** points around the image, default 0 for fit and 36 for paper sizes */
  margin?: number;
  /** paper orientation; auto follows each image */
  orientation?: 'auto' | 'portrait' | 'landscape';
}

interface Placed {
  ref: PDFRef;
  width: number;
  height: number;
}

export async function imageToPdf(inputs: { bytes: Uint8Array }[], opts: ImageToPdfOptions = {}): Promise<Uint8Array> {
  if (!inputs.length) throw invalidArgument('give at least one image.');
  const size = opts.pageSize ?? 'fit';
  if (size !== 'fit' && !Object.hasOwn(PageSizes, size)) {
    throw invalidArgument('pageSize: fit or a paper name (A0-A10, B0-B10, Letter, Legal, Tabloid, ...).');
  }
  const margin = opts.margin ?? (size === 'fit' ? 0 : 36);
  if (!(margin >= 0 && margin <= 500)) throw invalidArgument('margin: 0 to 500 points.');
  const doc = await PDFDocument.create();
  for (const [i, { bytes }] of inputs.entries()) {
    const kind = sniffImage(bytes);
    if (!kind) throw new ServiceError(415, 'unsupported_file_type', `images[${i}]: not a JPEG, PNG, WebP, TIFF or AVIF image.`);
    let placed: Placed[];
    try {
      if (kind === 'jpeg') placed = [await doc.embedJpg(bytes)];
      else if (kind === 'png') placed = [await doc.embedPng(bytes)];
      else placed = (await decodeFrames(kind, bytes)).map((f) => embedRgba(doc, f));
    } catch (e) {
      if (e instanceof ServiceError) throw e;
      throw new ServiceError(422, 'image_corrupt', `images[${i}]: the ${kind} image cannot be decoded: ${(e as Error).message}`);
    }
    for (const img of placed) addPage(doc, img, size, margin, opts.orientation ?? 'auto');
  }
  return doc.save({ useObjectStreams: true });
}

function addPage(doc: PDFDocument, img: Placed, size: PaperSize, margin: number, orientation: string): void {
  let pw: number, ph: number;
  if (size === 'fit') [pw, ph] = [img.width + 2 * margin, img.height + 2 * margin];
  else {
    const [a, b] = PageSizes[size];
    const landscape = orientation === 'landscape' || (orientation === 'auto' && img.width > img.height);
    [pw, ph] = landscape ? [Math.max(a, b), Math.min(a, b)] : [Math.min(a, b), Math.max(a, b)];
  }
  const scale = Math.min((pw - 2 * margin) / img.width, (ph - 2 * margin) / img.height);
  if (!(scale > 0)) throw invalidArgument('margin leaves no room for the image.');
  const w = img.width * scale;
  const h = img.height * scale;
  const page = doc.addPage([pw, ph]);
  const name = page.node.newXObject('Im', img.ref);
  page.pushOperators(
    pushGraphicsState(),
    concatTransformationMatrix(w, 0, 0, h, (pw - w) / 2, (ph - h) / 2),
    drawObject(name),
    popGraphicsState(),
  );
}

/** RGB samples + an SMask when any pixel is not opaque. */
function embedRgba(doc: PDFDocument, f: Rgba): Placed {
  const n = f.width * f.height;
  const rgb = new Uint8Array(n * 3);
  const alpha = new Uint8Array(n);
  let opaque = true;
  for (let i = 0; i < n; i++) {
    rgb[i * 3] = f.data[i * 4]!;
    rgb[i * 3 + 1] = f.data[i * 4 + 1]!;
    rgb[i * 3 + 2] = f.data[i * 4 + 2]!;
    alpha[i] = f.data[i * 4 + 3]!;
    if (alpha[i] !== 255) opaque = false;
  }
  const ctx = doc.context;
  const base = { Type: 'XObject', Subtype: 'Image', Width: f.width, Height: f.height, BitsPerComponent: 8 };
  const img = ctx.flateStream(rgb, { ...base, ColorSpace: 'DeviceRGB' });
  if (!opaque) img.dict.set(PDFName.of('SMask'), ctx.register(ctx.flateStream(alpha, { ...base, ColorSpace: 'DeviceGray' })));
  return { ref: ctx.register(img), width: f.width, height: f.height };
}
