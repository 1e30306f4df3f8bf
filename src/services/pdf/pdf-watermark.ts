/**
 * pdfWatermark: a text or logo mark on pages, tiled, centered or in a corner; marking again replaces
 * the previous mark (see watermark-tag.ts for how marks are recognised).
 */
import fontkit from '@cantoo/fontkit';
import {
  PDFBool,
  type PDFDocument,
  type PDFFont,
  PDFHexString,
  type PDFImage,
  PDFName,
  PDFNumber,
  PDFOperator,
  PDFOperatorNames as Op,
  type PDFPage,
  type PDFRef,
} from '@cantoo/pdf-lib';
import { invalidArgument, ServiceError } from '../errors.ts';
import { drawableRuns, installedFonts, type TextRun } from './fonts.ts';
import { openPdf } from './open.ts';
import { PageFrame } from './page-frame.ts';
import { type PageSelection, resolvePages } from './page-ranges.ts';
import { pdfaClaim } from './pdf-structure.ts';
import { guardSigned } from './signed-guard.ts';
import { removeMarks, TAG } from './watermark-tag.ts';
import { checkMark, type Corner, CORNERS, LAYOUTS, type MarkChoices, MAX_TEXT_LENGTH, type WatermarkLayout } from './mark-options.ts';

export type { Corner, WatermarkLayout } from './mark-options.ts';
export { MAX_TEXT_LENGTH } from './mark-options.ts';

export interface WatermarkOptions extends MarkChoices {
  /** PNG or JPEG bytes */
  logo?: Uint8Array;
  /** points, default 48 (corner: 14) */
  fontSize?: number;
  /** logo width in points; default a quarter of the page width (corner: an eighth) */
  logoWidth?: number;
  pages?: PageSelection;
  password?: string;
  /** remove the signatures of a signed input instead of refusing it */
  dropSignatures?: boolean;
}

const MARGIN = 24;

export async function pdfWatermark(bytes: Uint8Array, opts: WatermarkOptions): Promise<Uint8Array> {
  const { layout, corner, opacity, rotation, color: rgb } = checkMark(opts, !!opts.logo, '');
  const fontSize = opts.fontSize ?? (layout === 'corner' ? 14 : 48);
  if (!(fontSize >= 1 && fontSize <= 500)) throw invalidArgument('fontSize: 1 to 500 points.');
  const color = rgb.map((c) => c / 255) as [number, number, number];

  const { doc } = await openPdf(bytes, { password: opts.password });
  guardSigned(doc, opts.dropSignatures, 'a watermark');
  if (opacity < 1 && pdfaClaim(doc).claimed) {
    throw new ServiceError(
      422,
      'pdfa_forbids_transparency',
      'The PDF claims PDF/A conformance, which forbids transparency: use opacity 1.',
    );
  }
  const runs: TextRun[] = opts.text ? await drawableRuns(opts.text) : [];
  const pages = [...new Set(resolvePages(opts.pages, doc.getPageCount()))];
  removeMarks(doc); // marking again replaces the previous mark, on every page

  doc.registerFontkit(fontkit);
  const embedded = new Map<Uint8Array, PDFFont>();
  const pdfRuns: { font: PDFFont; text: string }[] = [];
  for (const r of runs) {
    let f = embedded.get(r.font.bytes);
    if (!f) embedded.set(r.font.bytes, f = await doc.embedFont(r.font.bytes, { subset: true }));
    pdfRuns.push({ font: f, text: r.text });
  }
  const logo = opts.logo ? await embedLogo(doc, opts.logo) : undefined;
  const gs = doc.context.obj({ Type: 'ExtGState', ca: opacity, CA: opacity });

  for (const i of pages) {
    const page = doc.getPage(i);
    const mark = drawMark(page, { layout, corner, rotation, fontSize, color, runs: pdfRuns, logo, logoWidth: opts.logoWidth });
    addMark(doc, page, mark, { runs: pdfRuns, logo, gs });
  }
  return doc.save({ useObjectStreams: true });
}

interface MarkSpec {
  layout: WatermarkLayout;
  corner: Corner;
  rotation: number;
  fontSize: number;
  color: [number, number, number];
  runs: { font: PDFFont; text: string }[];
  logo?: PDFImage;
  logoWidth?: number;
}

/** The operators drawing one page's mark, in that page's user space. */
function drawMark(page: PDFPage, s: MarkSpec): PDFOperator[] {
  const c = page.getCropBox();
  const rot = page.getRotation().angle;
  const frame = PageFrame.of({ left: c.x, bottom: c.y, right: c.x + c.width, top: c.y + c.height }, rot);
  // an angle as displayed becomes angle + /Rotate in user space
  const theta = ((s.rotation + rot) * Math.PI) / 180;
  const cos = Math.cos(theta);
  const sin = Math.sin(theta);
  const textW = s.runs.reduce((w, r) => w + r.font.widthOfTextAtSize(r.text, s.fontSize), 0);
  const logoW = s.logo ? (s.logoWidth ?? frame.width / (s.layout === 'corner' ? 8 : 4)) : 0;
  const logoH = s.logo ? (logoW * s.logo.height) / s.logo.width : 0;
  const w = s.logo ? logoW : textW;
  const h = s.logo ? logoH : s.fontSize * 0.7; // cap height is about 0.7 em: centres the text optically
  // centres in display coordinates
  const centres: [number, number][] = [];
  if (s.layout === 'centered') centres.push([frame.width / 2, frame.height / 2]);
  else if (s.layout === 'corner') {
    const ext = rotatedExtent(w, h, s.rotation);
    const x = s.corner.endsWith('left') ? MARGIN + ext[0] / 2 : frame.width - MARGIN - ext[0] / 2;
    const y = s.corner.startsWith('top') ? MARGIN + ext[1] / 2 : frame.height - MARGIN - ext[1] / 2;
    centres.push([x, y]);
  } else {
    const stepX = Math.max(w, 20) + s.fontSize * 2;
    const stepY = Math.max(h, 10) + s.fontSize * 3;
    let row = 0;
    for (let y = stepY / 2; y < frame.height + stepY; y += stepY, row++) {
      for (let x = (row % 2 ? stepX / 2 : 0) + stepX / 2 - stepX; x < frame.width + stepX; x += stepX) centres.push([x, y]);
    }
  }
  const ops: PDFOperator[] = [PDFOperator.of(Op.PushGraphicsState), PDFOperator.of(Op.SetGraphicsStateParams, [PDFName.of('SvcWmGS')])];
  for (const [X, Y] of centres) {
    const [cx, cy] = frame.toUser(X, Y);
    // origin of the drawing = centre - R * (w/2, h/2)
    const ox = cx - (cos * w) / 2 + (sin * h) / 2;
    const oy = cy - (sin * w) / 2 - (cos * h) / 2;
    if (s.logo) {
      ops.push(
        PDFOperator.of(Op.PushGraphicsState),
        PDFOperator.of(Op.ConcatTransformationMatrix, [cos * w, sin * w, -sin * h, cos * h, ox, oy].map(num)),
        PDFOperator.of(Op.DrawObject, [PDFName.of('SvcWmIm')]),
        PDFOperator.of(Op.PopGraphicsState),
      );
    } else {
      ops.push(
        PDFOperator.of(Op.BeginText),
        PDFOperator.of(Op.NonStrokingColorRgb, s.color.map(num)),
        PDFOperator.of(Op.SetTextMatrix, [cos, sin, -sin, cos, ox, oy].map(num)),
      );
      s.runs.forEach((r, k) => {
        ops.push(PDFOperator.of(Op.SetFontAndSize, [PDFName.of(`SvcWmF${k}`), num(s.fontSize)]));
        ops.push(PDFOperator.of(Op.ShowText, [r.font.encodeText(r.text) as PDFHexString]));
      });
      ops.push(PDFOperator.of(Op.EndText));
    }
  }
  ops.push(PDFOperator.of(Op.PopGraphicsState));
  return ops;
}

/** Wrap the page's content in q/Q and append the tagged form that draws the mark. */
function addMark(
  doc: PDFDocument,
  page: PDFPage,
  ops: PDFOperator[],
  res: { runs: { font: PDFFont }[]; logo?: PDFImage; gs: unknown },
): void {
  const ctx = doc.context;
  const c = page.getMediaBox();
  const fonts: Record<string, PDFRef> = {};
  res.runs.forEach((r, k) => (fonts[`SvcWmF${k}`] = r.font.ref));
  const resources = ctx.obj({
    ExtGState: { SvcWmGS: res.gs as never },
    ...(res.runs.length ? { Font: fonts } : {}),
    ...(res.logo ? { XObject: { SvcWmIm: res.logo.ref } } : {}),
  });
  const form = ctx.formXObject(ops, { BBox: [c.x, c.y, c.x + c.width, c.y + c.height], Resources: resources });
  form.dict.set(TAG, PDFBool.True);
  const formRef = ctx.register(form);
  const name = page.node.newXObject('SvcWm', formRef);
  const start = ctx.contentStream([PDFOperator.of(Op.PushGraphicsState)]);
  const end = ctx.contentStream([
    PDFOperator.of(Op.PopGraphicsState),
    PDFOperator.of(Op.BeginMarkedContentSequence, [PDFName.of('Artifact'), ctx.obj({ Type: 'Pagination', Subtype: 'Watermark' }) as never]), // inline property list
    PDFOperator.of(Op.DrawObject, [name]),
    PDFOperator.of(Op.EndMarkedContent),
  ]);
  start.dict.set(TAG, PDFBool.True);
  end.dict.set(TAG, PDFBool.True);
  page.node.normalize();
  if (!page.node.wrapContentStreams(ctx.register(start), ctx.register(end))) {
    // a page without content: just add the mark
    page.node.addContentStream(ctx.register(end));
  }
}

async function embedLogo(doc: PDFDocument, bytes: Uint8Array): Promise<PDFImage> {
  if (bytes[0] === 0x89 && bytes[1] === 0x50) return doc.embedPng(bytes);
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return doc.embedJpg(bytes);
  throw new ServiceError(415, 'unsupported_file_type', 'logo: PNG or JPEG bytes.');
}

function rotatedExtent(w: number, h: number, deg: number): [number, number] {
  const t = (deg * Math.PI) / 180;
  return [Math.abs(w * Math.cos(t)) + Math.abs(h * Math.sin(t)), Math.abs(w * Math.sin(t)) + Math.abs(h * Math.cos(t))];
}

const num = (n: number) => PDFNumber.of(Math.round(n * 1000) / 1000);

/** What the watermark route can do, for GET /svc/v1/pdf-watermark/capabilities. */
export async function watermarkCapabilities() {
  return {
    layouts: LAYOUTS,
    corners: CORNERS,
    maxTextLength: MAX_TEXT_LENGTH,
    logoFormats: ['image/png', 'image/jpeg'],
    opacity: { min: 0, exclusiveMin: true, max: 1, default: 0.3 },
    fontSize: { min: 1, max: 500, default: 48 },
    fonts: (await installedFonts()).map((f) => ({ family: f.family, scripts: f.scripts })),
  };
}
