/**
 * EXIF, XMP and ICC blocks: read from the input's container, and written into JPEG (APP1/APP2), PNG
 * (eXIf, iTXt XML:com.adobe.xmp, iCCP) and WebP (VP8X with EXIF/XMP /ICCP chunks) at the byte level, so
 * the same bytes come out whichever engine encoded the pixels. TIFF carries them as tags (tiff.ts).
 * Rights (notice, creator, credit line, usage terms, rights page) become an XMP packet with the IPTC
 * properties exiftool and photo tools read: dc:rights, dc:creator, photoshop:Credit,
 * xmpRights:UsageTerms, xmpRights:WebStatement, xmpRights:Marked.
 */
import { unzlibSync, zlibSync } from 'fflate';
import UTIF from 'utif2';
import { loadSharp } from '../../runtime/sharp.ts';
import * as probeModule from './probe.ts';
import type { ImageFormat } from './probe.ts';
import { concatBytes } from '../bytes.ts';

export interface ImageMetadata {
  exif?: Uint8Array;
  xmp?: Uint8Array;
  icc?: Uint8Array;
  /** EXIF orientation 1..8 (1 when absent) */
  orientation: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();
const ascii = (b: Uint8Array, from: number, len: number) => String.fromCharCode(...b.subarray(from, from + len));
const EXIF_HEADER = enc.encode('Exif\0\0');
const XMP_NS = 'http://ns.adobe.com/xap/1.0/\0';

export async function readMetadata(b: Uint8Array, format: ImageFormat): Promise<ImageMetadata> {
  let m: Omit<ImageMetadata, 'orientation'> = {};
  try {
    if (format === 'jpeg') m = fromJpeg(b);
    else if (format === 'png') m = fromPng(b);
    else if (format === 'webp') m = fromWebp(b);
    else if (format === 'tiff') m = fromTiff(b);
    else {
      const sharp = await loadSharp();
      if (sharp) {
        const md = await sharp(b).metadata();
        m = {
          exif: md.exif ? new Uint8Array(md.exif) : undefined,
          xmp: md.xmp ? new Uint8Array(md.xmp) : undefined,
          icc: md.icc ? new Uint8Array(md.icc) : undefined,
        };
      }
    }
  } catch { /* damaged metadata is dropped, never fatal */ }
  return { ...m, orientation: m.exif ? exifOrientation(m.exif) : 1 };
}

function fromJpeg(b: Uint8Array) {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out: Omit<ImageMetadata, 'orientation'> = {};
  const icc: Uint8Array[] = [];
  let i = 2;
  while (i + 4 < b.length && b[i] === 0xff) {
    const m = b[i + 1]!;
    if (m === 0xda || m === 0xd9) break; // image data starts
    const len = dv.getUint16(i + 2);
    const body = b.subarray(i + 4, i + 2 + len);
    if (m === 0xe1 && ascii(body, 0, 6) === 'Exif\0\0') out.exif = body.slice(6);
    else if (m === 0xe1 && ascii(body, 0, XMP_NS.length) === XMP_NS) out.xmp = body.slice(XMP_NS.length);
    else if (m === 0xe2 && ascii(body, 0, 12) === 'ICC_PROFILE\0') icc[body[12]! - 1] = body.slice(14);
    i += 2 + len;
  }
  if (icc.length && icc.every(Boolean)) out.icc = concatBytes(icc);
  return out;
}

function* pngChunks(b: Uint8Array) {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let i = 8;
  while (i + 12 <= b.length) {
    const len = dv.getUint32(i);
    const type = ascii(b, i + 4, 4);
    yield { type, start: i, data: b.subarray(i + 8, i + 8 + len), end: i + 12 + len };
    i += 12 + len;
  }
}

function fromPng(b: Uint8Array) {
  const out: Omit<ImageMetadata, 'orientation'> = {};
  for (const c of pngChunks(b)) {
    if (c.type === 'eXIf') out.exif = c.data.slice();
    else if (c.type === 'iCCP') {
      const z = c.data.indexOf(0);
      out.icc = unzlibSync(c.data.subarray(z + 2));
    } else if (c.type === 'iTXt' && ascii(c.data, 0, 18) === 'XML:com.adobe.xmp\0') {
      // keyword\0 compression-flag method language\0 translated\0 text
      let p = 18 + 2;
      p = c.data.indexOf(0, p) + 1;
      p = c.data.indexOf(0, p) + 1;
      out.xmp = c.data[18] ? unzlibSync(c.data.subarray(p)) : c.data.slice(p);
    }
  }
  return out;
}

function* riffChunks(b: Uint8Array) {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let i = 12;
  while (i + 8 <= b.length) {
    const len = dv.getUint32(i + 4, true);
    yield { type: ascii(b, i, 4), start: i, data: b.subarray(i + 8, i + 8 + len), end: i + 8 + len + (len & 1) };
    i += 8 + len + (len & 1);
  }
}

function fromWebp(b: Uint8Array) {
  const out: Omit<ImageMetadata, 'orientation'> = {};
  for (const c of riffChunks(b)) {
    if (c.type === 'EXIF') out.exif = startsWith(c.data, EXIF_HEADER) ? c.data.slice(6) : c.data.slice();
    else if (c.type === 'XMP ') out.xmp = c.data.slice();
    else if (c.type === 'ICCP') out.icc = c.data.slice();
  }
  return out;
}

function fromTiff(b: Uint8Array) {
  const ifd = UTIF.decode(b.slice().buffer as ArrayBuffer)[0] as Record<string, unknown> | undefined;
  const bytes = (
    v: unknown,
  ) => (Array.isArray(v) ? new Uint8Array(v as number[]) : v instanceof Uint8Array ? v : typeof v === 'string' ? enc.encode(v) : undefined);
  const orient = (ifd?.['t274'] as number[] | undefined)?.[0];
  return { xmp: bytes(ifd?.['t700']), icc: bytes(ifd?.['t34675']), ...(orient && orient > 1 ? { exif: minimalExif(orient) } : {}) };
}

/** A one-tag EXIF block (orientation), so a TIFF's orientation goes through the same path as EXIF's. */
function minimalExif(orientation: number): Uint8Array {
  const b = new Uint8Array(8 + 2 + 12 + 4);
  const dv = new DataView(b.buffer);
  b[0] = b[1] = 0x49;
  dv.setUint16(2, 42, true);
  dv.setUint32(4, 8, true);
  dv.setUint16(8, 1, true);
  dv.setUint16(10, 0x0112, true);
  dv.setUint16(12, 3, true);
  dv.setUint32(14, 1, true);
  dv.setUint16(18, orientation, true);
  return b;
}

/** Tag entries of IFD0 of an EXIF (TIFF-structured) block. */
function exifEntries(exif: Uint8Array): { le: boolean; dv: DataView; entries: { tag: number; at: number }[] } | null {
  if (exif.length < 14) return null;
  const le = exif[0] === 0x49;
  const dv = new DataView(exif.buffer, exif.byteOffset, exif.byteLength);
  const ifd = dv.getUint32(4, le);
  if (ifd + 2 > exif.length) return null;
  const n = dv.getUint16(ifd, le);
  const entries = [];
  for (let k = 0; k < n && ifd + 2 + k * 12 + 12 <= exif.length; k++) {
    entries.push({ tag: dv.getUint16(ifd + 2 + k * 12, le), at: ifd + 2 + k * 12 });
  }
  return { le, dv, entries };
}

export function exifOrientation(exif: Uint8Array): number {
  const e = exifEntries(exif);
  const o = e?.entries.find((x) => x.tag === 0x0112);
  const v = o ? e!.dv.getUint16(o.at + 8, e!.le) : 1;
  return v >= 1 && v <= 8 ? v : 1;
}

/** A copy of the EXIF block saying "upright" (the pixels were turned already). */
export function exifUpright(exif: Uint8Array): Uint8Array {
  const copy = exif.slice();
  const e = exifEntries(copy);
  const o = e?.entries.find((x) => x.tag === 0x0112);
  if (o) e!.dv.setUint16(o.at + 8, 1, e!.le);
  return copy;
}

/** A few well-known IFD0 / Exif-IFD tags as text, for analysis. */
export function exifSummary(exif: Uint8Array): Record<string, string | number> {
  const e = exifEntries(exif);
  if (!e) return {};
  const names: Record<number, string> = {
    0x010f: 'make',
    0x0110: 'model',
    0x0131: 'software',
    0x0132: 'date_time',
    0x0112: 'orientation',
    0x8298: 'copyright',
    0x013b: 'artist',
    0x9003: 'date_time_original',
    0x8825: 'gps',
  };
  const out: Record<string, string | number> = {};
  const read = (entries: { tag: number; at: number }[]) => {
    for (const { tag, at } of entries) {
      const name = names[tag];
      if (tag === 0x8769) { // Exif sub-IFD
        const ifd = e.dv.getUint32(at + 8, e.le);
        if (ifd + 2 < exif.length) {
          const n = e.dv.getUint16(ifd, e.le), sub = [];
          for (let k = 0; k < n && ifd + 14 + k * 12 <= exif.length; k++) {
            sub.push({ tag: e.dv.getUint16(ifd + 2 + k * 12, e.le), at: ifd + 2 + k * 12 });
          }
          read(sub);
        }
        continue;
      }
      if (!name) continue;
      const type = e.dv.getUint16(at + 2, e.le), count = e.dv.getUint32(at + 4, e.le);
      if (tag === 0x8825) out.gps = 'present';
      else if (type === 2) {
        const off = count > 4 ? e.dv.getUint32(at + 8, e.le) : at + 8;
        out[name] = dec.decode(exif.subarray(off, off + count)).replace(/\0+$/, '').trim();
      } else if (type === 3) out[name] = e.dv.getUint16(at + 8, e.le);
    }
  };
  read(e.entries);
  return out;
}

export interface Rights {
  notice?: string;
  creator?: string;
  credit_line?: string;
  usage_terms?: string;
  rights_page?: string;
}

const xml = (s: string) => s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);
const alt = (s: string) => `<rdf:Alt><rdf:li xml:lang="x-default">${xml(s)}</rdf:li></rdf:Alt>`;

export const hasRights = (r?: Rights) => !!r && Object.values(r).some((v) => typeof v === 'string' && v !== '');

/** The XMP packet stating the rights. */
export function rightsXmp(r: Rights): Uint8Array {
  const props = [
    r.notice ? `<dc:rights>${alt(r.notice)}</dc:rights>` : '',
    r.creator ? `<dc:creator><rdf:Seq><rdf:li>${xml(r.creator)}</rdf:li></rdf:Seq></dc:creator>` : '',
    r.credit_line ? `<photoshop:Credit>${xml(r.credit_line)}</photoshop:Credit>` : '',
    r.usage_terms ? `<xmpRights:UsageTerms>${alt(r.usage_terms)}</xmpRights:UsageTerms>` : '',
    r.rights_page ? `<xmpRights:WebStatement>${xml(r.rights_page)}</xmpRights:WebStatement>` : '',
    r.notice || r.usage_terms ? '<xmpRights:Marked>True</xmpRights:Marked>' : '',
  ].join('');
  return enc.encode(
    '<?xpacket begin="\uFEFF" id="W5M0MpCehiHzreSzNTczkc9d"?>' +
      '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
      '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" xmlns:xmpRights="http://ns.adobe.com/xap/1.0/rights/">' +
      props + '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>',
  );
}

export interface MetadataBlocks {
  exif?: Uint8Array;
  xmp?: Uint8Array;
  icc?: Uint8Array;
}

/** Adds the blocks to freshly encoded JPEG/PNG/WebP bytes (which carry none of their own). Other formats: unchanged. */
export function writeMetadata(b: Uint8Array, format: string, m: MetadataBlocks): Uint8Array {
  if (!m.exif && !m.xmp && !m.icc) return b;
  if (format === 'jpeg') return toJpeg(b, m);
  if (format === 'png') return toPng(b, m);
  if (format === 'webp') return toWebp(b, m);
  return b;
}

function segment(marker: number, body: Uint8Array): Uint8Array {
  const s = new Uint8Array(4 + body.length);
  s[0] = 0xff;
  s[1] = marker;
  new DataView(s.buffer).setUint16(2, body.length + 2);
  s.set(body, 4);
  return s;
}

function toJpeg(b: Uint8Array, m: MetadataBlocks): Uint8Array {
  // drop the encoder's own EXIF/XMP/ICC segments (APP1, APP2); JFIF and Adobe (APP14, CMYK) stay
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let i = 2;
  const keep: Uint8Array[] = [];
  while (i + 4 < b.length && b[i] === 0xff && b[i + 1]! >= 0xe0 && b[i + 1]! <= 0xef) {
    const len = dv.getUint16(i + 2);
    if (b[i + 1] !== 0xe1 && b[i + 1] !== 0xe2) keep.push(b.subarray(i, i + 2 + len));
    i += 2 + len;
  }
  const segs: Uint8Array[] = [b.subarray(0, 2), ...keep];
  if (m.exif && m.exif.length < 65528) segs.push(segment(0xe1, concatBytes([EXIF_HEADER, m.exif])));
  if (m.xmp && m.xmp.length < 65000) segs.push(segment(0xe1, concatBytes([enc.encode(XMP_NS), m.xmp])));
  if (m.icc) {
    const max = 65519;
    const n = Math.ceil(m.icc.length / max);
    for (let k = 0; k < n; k++) {
      segs.push(
        segment(0xe2, concatBytes([enc.encode('ICC_PROFILE\0'), new Uint8Array([k + 1, n]), m.icc.subarray(k * max, (k + 1) * max)])),
      );
    }
  }
  segs.push(b.subarray(i));
  return concatBytes(segs);
}

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const c = new Uint8Array(12 + data.length);
  const dv = new DataView(c.buffer);
  dv.setUint32(0, data.length);
  c.set(enc.encode(type), 4);
  c.set(data, 8);
  dv.setUint32(8 + data.length, crc32(c.subarray(4, 8 + data.length)));
  return c;
}

function toPng(b: Uint8Array, m: MetadataBlocks): Uint8Array {
  const parts: Uint8Array[] = [b.subarray(0, 8)];
  for (const c of pngChunks(b)) {
    if (
      ['eXIf', 'iCCP', 'sRGB', 'gAMA', 'cHRM'].includes(c.type) || (c.type === 'iTXt' && ascii(c.data, 0, 18) === 'XML:com.adobe.xmp\0')
    ) continue;
    parts.push(b.subarray(c.start, c.end));
    if (c.type === 'IHDR') {
      if (m.icc) parts.push(pngChunk('iCCP', concatBytes([enc.encode('icc\0\0'), zlibSync(m.icc)])));
      if (m.exif) parts.push(pngChunk('eXIf', m.exif));
      if (m.xmp) parts.push(pngChunk('iTXt', concatBytes([enc.encode('XML:com.adobe.xmp\0\0\0\0\0'), m.xmp])));
    }
  }
  return concatBytes(parts);
}

function riffChunk(type: string, data: Uint8Array): Uint8Array {
  const c = new Uint8Array(8 + data.length + (data.length & 1));
  c.set(enc.encode(type), 0);
  new DataView(c.buffer).setUint32(4, data.length, true);
  c.set(data, 8);
  return c;
}

function toWebp(b: Uint8Array, m: MetadataBlocks): Uint8Array {
  const chunks = [...riffChunks(b)];
  const image = chunks.filter((c) => ['VP8 ', 'VP8L', 'ALPH', 'ANIM', 'ANMF'].includes(c.type));
  const vp8x = chunks.find((c) => c.type === 'VP8X');
  const { probeImage } = probeModule;
  const size = probeImage(b).pages[0]!;
  const alpha = chunks.some((c) => c.type === 'ALPH') || (chunks.find((c) => c.type === 'VP8L')?.data[4]! & 0x10) !== 0 ||
    (vp8x ? (vp8x.data[0]! & 0x10) !== 0 : false);
  const flags = (m.icc ? 0x20 : 0) | (alpha ? 0x10 : 0) | (m.exif ? 0x08 : 0) | (m.xmp ? 0x04 : 0) | (vp8x ? vp8x.data[0]! & 0x02 : 0);
  const head = new Uint8Array(10);
  head[0] = flags;
  const w = size.width - 1, h = size.height - 1;
  head[4] = w & 255;
  head[5] = (w >> 8) & 255;
  head[6] = (w >> 16) & 255;
  head[7] = h & 255;
  head[8] = (h >> 8) & 255;
  head[9] = (h >> 16) & 255;
  const body = concatBytes([
    riffChunk('VP8X', head),
    ...(m.icc ? [riffChunk('ICCP', m.icc)] : []),
    ...image.map((c) => b.subarray(c.start, c.end)),
    ...(m.exif ? [riffChunk('EXIF', m.exif)] : []),
    ...(m.xmp ? [riffChunk('XMP ', m.xmp)] : []),
  ]);
  const out = new Uint8Array(12 + body.length);
  out.set(enc.encode('RIFF'), 0);
  new DataView(out.buffer).setUint32(4, 4 + body.length, true);
  out.set(enc.encode('WEBP'), 8);
  out.set(body, 12);
  return out;
}

const startsWith = (b: Uint8Array, p: Uint8Array) => p.every((x, i) => b[i] === x);

const CRC = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = CRC[(c ^ b[i]!) & 255]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
