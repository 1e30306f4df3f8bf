/**
 * Facts read from the object graph with pdf-lib: signatures, the PDF/A claim in XMP, fonts.
 * Shared by info (reports them) and watermark (refuses signed / PDF/A-with-transparency inputs).
 */
import { decodePDFRawStream, PDFArray, PDFDict, PDFDocument, PDFName, PDFRawStream, PDFStream } from '@cantoo/pdf-lib';

/** Number of signature dictionaries (/Type /Sig, or a /ByteRange + /Contents pair) in the file. */
export function countSignatures(doc: PDFDocument): number {
  let n = 0;
  for (const [, obj] of doc.context.enumerateIndirectObjects()) {
    const dict = obj instanceof PDFDict ? obj : null;
    if (!dict) continue;
    const type = dict.get(PDFName.of('Type'));
    if (
      type === PDFName.of('Sig') ||
      (dict.has(PDFName.of('ByteRange')) && dict.has(PDFName.of('Contents')) && dict.has(PDFName.of('Filter')))
    ) n++;
  }
  return n;
}

export interface PdfaClaim {
  claimed: boolean;
  part?: number;
  conformance?: string;
}

/** The PDF/A identification in the catalog's XMP packet (a claim, not a validation). */
export function pdfaClaim(doc: PDFDocument): PdfaClaim {
  const xmp = xmpText(doc);
  if (!xmp) return { claimed: false };
  const part = /pdfaid:part(?:\s*=\s*["']|>)\s*(\d)/.exec(xmp)?.[1];
  const conf = /pdfaid:conformance(?:\s*=\s*["']|>)\s*([A-Za-z])/.exec(xmp)?.[1];
  return part ? { claimed: true, part: Number(part), conformance: conf?.toUpperCase() } : { claimed: false };
}

function xmpText(doc: PDFDocument): string | undefined {
  const stream = doc.catalog.lookupMaybe(PDFName.of('Metadata'), PDFStream);
  if (!stream) return undefined;
  try {
    const bytes = stream instanceof PDFRawStream ? decodePDFRawStream(stream).decode() : stream.getContents();
    return new TextDecoder().decode(bytes);
  } catch {
    return undefined;
  }
}

export interface FontInfo {
  name: string;
  type: string;
  embedded: boolean;
  /** a subset tag ABCDEF+ precedes the name */
  subset: boolean;
}

/** Fonts referenced from page resources (and form XObjects inside them), deduplicated. */
export function listFonts(doc: PDFDocument): FontInfo[] {
  const seen = new Set<unknown>();
  const fonts = new Map<string, FontInfo>();
  const visitResources = (res: PDFDict | undefined, depth: number) => {
    if (!res || depth > 4) return;
    const fontDict = res.lookupMaybe(PDFName.of('Font'), PDFDict);
    for (const [, v] of fontDict?.entries() ?? []) {
      if (seen.has(v)) continue;
      seen.add(v);
      const f = doc.context.lookupMaybe(v, PDFDict);
      if (f) addFont(f);
    }
    const xobjs = res.lookupMaybe(PDFName.of('XObject'), PDFDict);
    for (const [, v] of xobjs?.entries() ?? []) {
      if (seen.has(v)) continue;
      seen.add(v);
      const x = doc.context.lookupMaybe(v, PDFStream);
      if (x?.dict.get(PDFName.of('Subtype')) === PDFName.of('Form')) {
        visitResources(x.dict.lookupMaybe(PDFName.of('Resources'), PDFDict), depth + 1);
      }
    }
  };
  const addFont = (f: PDFDict) => {
    const rawName = f.get(PDFName.of('BaseFont'))?.toString().replace(/^\//, '') ?? '(unnamed)';
    const name = decodeName(rawName);
    const type = f.get(PDFName.of('Subtype'))?.toString().replace(/^\//, '') ?? 'Unknown';
    let desc = f.lookupMaybe(PDFName.of('FontDescriptor'), PDFDict);
    const descendants = f.lookupMaybe(PDFName.of('DescendantFonts'), PDFArray);
    if (!desc && descendants?.size()) {
      desc = doc.context.lookupMaybe(descendants.get(0), PDFDict)?.lookupMaybe(PDFName.of('FontDescriptor'), PDFDict);
    }
    const embedded = type === 'Type3' || !!desc && ['FontFile', 'FontFile2', 'FontFile3'].some((k) => desc!.has(PDFName.of(k)));
    const key = `${name}|${type}|${embedded}`;
    if (!fonts.has(key)) fonts.set(key, { name, type, embedded, subset: /^[A-Z]{6}\+/.test(name) });
  };
  for (const page of doc.getPages()) {
    const res = page.node.Resources();
    visitResources(res, 0);
  }
  return [...fonts.values()];
}

/** PDF names escape bytes as #xx. */
const decodeName = (s: string) => s.replace(/#([0-9a-fA-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
