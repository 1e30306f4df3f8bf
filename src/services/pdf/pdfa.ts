/**
 * PDF/A-2b and PDF/A-3b: conversion (decrypted, standard fonts replaced by embedded DejaVu equivalents,
 * JavaScript removed, sRGB OutputIntent, XMP identification and a trailer /ID through pdf-lib's
 * convertToPDFA) and a check that lists the violations it can see. What cannot be made conformant is
 * refused with the exact reason: a non-embedded font with no substitute, a signature (conversion would
 * break it).
 */
import fontkit from '@cantoo/fontkit';
import { readFile } from 'node:fs/promises';
import { PDFArray, PDFDict, type PDFDocument, PDFName, PDFNumber, PDFRef, PDFStream } from '@cantoo/pdf-lib';
import { packageFile } from '../../runtime/assets.ts';
import { invalidArgument, ServiceError } from '../errors.ts';
import { openPdf } from './open.ts';
import { pdfaClaim } from './pdf-structure.ts';
import { refuseSigned } from './signed-guard.ts';

export type PdfaLevel = '2b' | '3b';

export interface PdfaViolation {
  rule: string;
  message: string;
}
export interface PdfaCheck {
  claimed: { part?: number; conformance?: string } | null;
  compliant: boolean;
  violations: PdfaViolation[];
}

const STANDARD: Record<string, string> = {
  Helvetica: 'DejaVuSans',
  'Helvetica-Bold': 'DejaVuSans-Bold',
  'Helvetica-Oblique': 'DejaVuSans-Oblique',
  'Helvetica-BoldOblique': 'DejaVuSans-BoldOblique',
  Arial: 'DejaVuSans',
  'Arial-Bold': 'DejaVuSans-Bold',
  ArialMT: 'DejaVuSans',
  'Times-Roman': 'DejaVuSerif',
  'Times-Bold': 'DejaVuSerif-Bold',
  'Times-Italic': 'DejaVuSerif-Italic',
  'Times-BoldItalic': 'DejaVuSerif-BoldItalic',
  Courier: 'DejaVuSansMono',
  'Courier-Bold': 'DejaVuSansMono-Bold',
  'Courier-Oblique': 'DejaVuSansMono-Oblique',
  'Courier-BoldOblique': 'DejaVuSansMono-BoldOblique',
};

export async function pdfToPdfa(
  bytes: Uint8Array,
  opts: { level?: PdfaLevel; password?: string } = {},
): Promise<{ pdf: Uint8Array; changes: string[]; check: PdfaCheck }> {
  const level = opts.level ?? '2b';
  if (level !== '2b' && level !== '3b') throw invalidArgument('level: 2b or 3b.', { field: 'level' });
  const { doc, encryption } = await openPdf(bytes, { password: opts.password });
  refuseSigned(doc, 'converting it to PDF/A rewrites the file');
  const changes: string[] = [];
  if (encryption) changes.push(`removed the encryption (${encryption.algorithm}): PDF/A forbids it`);
  await embedStandardFonts(doc, changes);
  removeJavaScript(doc, changes);
  if (level === '2b') {
    const names = doc.catalog.lookupMaybe(PDFName.of('Names'), PDFDict);
    if (names?.has(PDFName.of('EmbeddedFiles'))) {
      names.delete(PDFName.of('EmbeddedFiles'));
      changes.push('removed embedded files: PDF/A-2b allows only PDF/A attachments (use level 3b to keep them)');
    }
  }
  doc.convertToPDFA({ conformance: level === '2b' ? '2B' : '3B' });
  changes.push(`added an sRGB OutputIntent, XMP PDF/A-${level.toUpperCase()} identification and a document /ID`);
  const pdf = await doc.save({ useObjectStreams: true });
  const { doc: out } = await openPdf(pdf);
  return { pdf, changes, check: checkDoc(out, false) };
}

export async function pdfaCheck(bytes: Uint8Array, opts: { password?: string } = {}): Promise<PdfaCheck> {
  const { doc, encryption } = await openPdf(bytes, { password: opts.password });
  return checkDoc(doc, !!encryption);
}

function checkDoc(doc: PDFDocument, encrypted: boolean): PdfaCheck {
  const v: PdfaViolation[] = [];
  const claim = pdfaClaim(doc);
  if (!claim.claimed) {
    v.push({ rule: 'xmp_identification', message: 'no XMP metadata stream with pdfaid:part and pdfaid:conformance in the catalog' });
  }
  if (encrypted) v.push({ rule: 'encryption', message: 'the file is encrypted' });
  const intents = doc.catalog.lookupMaybe(PDFName.of('OutputIntents'), PDFArray);
  const pdfa = (intents?.asArray() ?? []).map((r) => doc.context.lookupMaybe(r, PDFDict)).find((d) =>
    d?.get(PDFName.of('S'))?.toString() === '/GTS_PDFA1'
  );
  if (!pdfa) v.push({ rule: 'output_intent', message: 'no OutputIntent with /S /GTS_PDFA1' });
  else if (!pdfa.lookupMaybe(PDFName.of('DestOutputProfile'), PDFStream)) {
    v.push({ rule: 'output_intent', message: 'the PDF/A OutputIntent has no embedded ICC profile (DestOutputProfile)' });
  }
  if (!doc.context.trailerInfo.ID) v.push({ rule: 'trailer_id', message: 'the trailer has no /ID' });
  for (const f of fontsOf(doc)) if (!f.embedded) v.push({ rule: 'font_embedding', message: `the font ${f.name} is not embedded` });
  if (hasJavaScript(doc)) v.push({ rule: 'javascript', message: 'the document carries JavaScript' });
  const part = claim.part;
  if (part === 1 && hasTransparency(doc)) {
    v.push({ rule: 'transparency', message: 'PDF/A-1 forbids transparency (soft masks, constant alpha below 1, transparency groups)' });
  }
  const names = doc.catalog.lookupMaybe(PDFName.of('Names'), PDFDict);
  if (part === 2 && names?.has(PDFName.of('EmbeddedFiles'))) {
    v.push({ rule: 'embedded_files', message: 'PDF/A-2 allows only PDF/A files as attachments' });
  }
  if (part === 1 && names?.has(PDFName.of('EmbeddedFiles'))) v.push({ rule: 'embedded_files', message: 'PDF/A-1 forbids embedded files' });
  return { claimed: claim.claimed ? { part: claim.part, conformance: claim.conformance } : null, compliant: v.length === 0, violations: v };
}

/** Every font dictionary reachable from page resources (and their forms), with its embedding state. */
function fontsOf(doc: PDFDocument): { name: string; dict: PDFDict; embedded: boolean; ref?: PDFRef }[] {
  const out = new Map<PDFDict, { name: string; dict: PDFDict; embedded: boolean; ref?: PDFRef }>();
  const seen = new Set<unknown>();
  const visit = (res: PDFDict | undefined, depth: number) => {
    if (!res || depth > 6 || seen.has(res)) return;
    seen.add(res);
    const fonts = res.lookupMaybe(PDFName.of('Font'), PDFDict);
    for (const [, ref] of fonts?.entries() ?? []) {
      const f = doc.context.lookupMaybe(ref, PDFDict);
      if (!f || out.has(f)) continue;
      const subtype = f.get(PDFName.of('Subtype'))?.toString();
      let desc = f.lookupMaybe(PDFName.of('FontDescriptor'), PDFDict);
      const kids = f.lookupMaybe(PDFName.of('DescendantFonts'), PDFArray);
      if (!desc && kids?.size()) desc = doc.context.lookupMaybe(kids.get(0), PDFDict)?.lookupMaybe(PDFName.of('FontDescriptor'), PDFDict);
      const embedded = subtype === '/Type3' || (!!desc && ['FontFile', 'FontFile2', 'FontFile3'].some((k) => desc!.has(PDFName.of(k))));
      out.set(f, {
        name: f.get(PDFName.of('BaseFont'))?.toString().replace(/^\//, '') ?? '(unnamed)',
        dict: f,
        embedded,
        ref: ref instanceof PDFRef ? ref : undefined,
      });
    }
    const xobjects = res.lookupMaybe(PDFName.of('XObject'), PDFDict);
    for (const [, ref] of xobjects?.entries() ?? []) {
      const x = doc.context.lookupMaybe(ref, PDFStream);
      if (x?.dict.get(PDFName.of('Subtype'))?.toString() === '/Form') {
        visit(x.dict.lookupMaybe(PDFName.of('Resources'), PDFDict), depth + 1);
      }
    }
  };
  for (const p of doc.getPages()) visit(p.node.Resources(), 0);
  return [...out.values()];
}

/**
 * A standard-14 font (not embedded) becomes a simple TrueType font with the DejaVu program embedded,
 * same WinAnsi codes, widths from the embedded program (PDF/A requires them to agree). Text keeps its
 * characters; glyph shapes and widths are DejaVu's.
 */
async function embedStandardFonts(doc: PDFDocument, changes: string[]) {
  const missing: string[] = [];
  const programs = new Map<
    string,
    {
      ref: PDFRef;
      widths: number[];
      font: {
        unitsPerEm: number;
        ascent: number;
        descent: number;
        capHeight: number;
        bbox: { minX: number; minY: number; maxX: number; maxY: number };
      };
    }
  >();
  const cp1252 = new TextDecoder('windows-1252');
  for (const f of fontsOf(doc)) {
    if (f.embedded) continue;
    const base = f.name.replace(/^[A-Z]{6}\+/, '').replace(/,/g, '-');
    const sub = STANDARD[base];
    const enc = f.dict.get(PDFName.of('Encoding'))?.toString();
    if (!sub || f.dict.get(PDFName.of('Subtype'))?.toString() !== '/Type1' || (enc && enc !== '/WinAnsiEncoding')) {
      missing.push(f.name);
      continue;
    }
    let prog = programs.get(sub);
    if (!prog) {
      const bytes = new Uint8Array(await readFile(packageFile(`dejavu-fonts-ttf/ttf/${sub}.ttf`)));
      const font = fontkit.create(bytes) as unknown as {
        unitsPerEm: number;
        ascent: number;
        descent: number;
        capHeight: number;
        bbox: { minX: number; minY: number; maxX: number; maxY: number };
        glyphForCodePoint(cp: number): { advanceWidth: number };
      };
      const widths: number[] = [];
      for (let c = 32; c <= 255; c++) {
        const ch = cp1252.decode(new Uint8Array([c])).codePointAt(0)!;
        widths.push(Math.round((font.glyphForCodePoint(ch).advanceWidth * 1000) / font.unitsPerEm));
      }
      const ref = doc.context.register(doc.context.flateStream(bytes, { Length1: bytes.length }));
      prog = { ref, widths, font };
      programs.set(sub, prog);
    }
    const s = 1000 / prog.font.unitsPerEm;
    const desc = doc.context.obj({
      Type: 'FontDescriptor',
      FontName: PDFName.of(sub),
      Flags: 32,
      FontBBox: [prog.font.bbox.minX * s, prog.font.bbox.minY * s, prog.font.bbox.maxX * s, prog.font.bbox.maxY * s].map(Math.round),
      ItalicAngle: 0,
      Ascent: Math.round(prog.font.ascent * s),
      Descent: Math.round(prog.font.descent * s),
      CapHeight: Math.round((prog.font.capHeight || prog.font.ascent) * s),
      StemV: 80,
      FontFile2: prog.ref,
    });
    f.dict.set(PDFName.of('Subtype'), PDFName.of('TrueType'));
    f.dict.set(PDFName.of('BaseFont'), PDFName.of(sub));
    f.dict.set(PDFName.of('Encoding'), PDFName.of('WinAnsiEncoding'));
    f.dict.set(PDFName.of('FirstChar'), PDFNumber.of(32));
    f.dict.set(PDFName.of('LastChar'), PDFNumber.of(255));
    f.dict.set(PDFName.of('Widths'), doc.context.obj(prog.widths));
    f.dict.set(PDFName.of('FontDescriptor'), doc.context.register(desc));
    changes.push(`embedded ${sub} in place of the non-embedded standard font ${f.name}`);
  }
  if (missing.length) {
    throw new ServiceError(
      422,
      'pdfa_font_not_embedded',
      `PDF/A requires every font to be embedded, and these are not (no substitute is shipped for them): ${
        [...new Set(missing)].join(', ')
      }.`,
      { details: { fonts: [...new Set(missing)] } },
    );
  }
}

function hasJavaScript(doc: PDFDocument): boolean {
  const names = doc.catalog.lookupMaybe(PDFName.of('Names'), PDFDict);
  if (names?.has(PDFName.of('JavaScript'))) return true;
  const oa = doc.catalog.lookupMaybe(PDFName.of('OpenAction'), PDFDict);
  return oa?.get(PDFName.of('S'))?.toString() === '/JavaScript' || doc.catalog.has(PDFName.of('AA'));
}

function removeJavaScript(doc: PDFDocument, changes: string[]) {
  if (!hasJavaScript(doc)) return;
  doc.catalog.lookupMaybe(PDFName.of('Names'), PDFDict)?.delete(PDFName.of('JavaScript'));
  const oa = doc.catalog.lookupMaybe(PDFName.of('OpenAction'), PDFDict);
  if (oa?.get(PDFName.of('S'))?.toString() === '/JavaScript') doc.catalog.delete(PDFName.of('OpenAction'));
  doc.catalog.delete(PDFName.of('AA'));
  changes.push('removed document JavaScript: PDF/A forbids it');
}

function hasTransparency(doc: PDFDocument): boolean {
  for (const [, obj] of doc.context.enumerateIndirectObjects()) {
    const d = obj instanceof PDFDict ? obj : obj instanceof PDFStream ? obj.dict : undefined;
    if (!d) continue;
    const ca = d.lookupMaybe(PDFName.of('ca'), PDFNumber)?.asNumber() ?? 1;
    const CA = d.lookupMaybe(PDFName.of('CA'), PDFNumber)?.asNumber() ?? 1;
    if (ca < 1 || CA < 1) return true;
    if (d.has(PDFName.of('SMask')) && d.get(PDFName.of('SMask'))?.toString() !== '/None') return true;
    if (d.lookupMaybe(PDFName.of('Group'), PDFDict)?.get(PDFName.of('S'))?.toString() === '/Transparency') return true;
  }
  return false;
}
