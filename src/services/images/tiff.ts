/**
 * TIFF: every page decoded with utif2; written by our own baseline writer (Adobe Deflate strips), which
 * does what the codec libraries do not all do: several pages in one file, CMYK pages with their ICC
 * profile, and XMP (tag 700) on every page.
 */
import { zlibSync } from 'fflate';
import UTIF from 'utif2';
import type { Rgba } from './codecs.ts';
import { cmykToSrgb } from './icc.ts';

/** The chosen pages as sRGB RGBA; 8-bit CMYK pages go through Little CMS with their embedded profile (else the shipped one). */
export async function decodeTiffPages(bytes: Uint8Array, pages: number[]): Promise<Rgba[]> {
  const buf = bytes.slice().buffer as ArrayBuffer;
  const ifds = UTIF.decode(buf).filter((ifd) => ifd['t256'] && ifd['t257']);
  const out: Rgba[] = [];
  for (const p of pages) {
    const ifd = ifds[p]!;
    UTIF.decodeImage(buf, ifd);
    const w = ifd.width as number, h = ifd.height as number;
    const tag = (t: number) => (ifd[`t${t}`] as number[] | undefined)?.[0];
    if (tag(262) === 5 && tag(277) === 4 && tag(258) === 8 && (tag(284) ?? 1) === 1) {
      const icc = ifd['t34675'] as number[] | Uint8Array | undefined;
      out.push(
        await cmykToSrgb(
          new Uint8Array((ifd.data as Uint8Array).buffer, (ifd.data as Uint8Array).byteOffset, w * h * 4),
          w,
          h,
          icc ? new Uint8Array(icc) : undefined,
        ),
      );
    } else out.push({ data: new Uint8ClampedArray(UTIF.toRGBA8(ifd).buffer), width: w, height: h });
  }
  return out;
}

export type TiffPage =
  | ({ kind: 'rgba' } & Rgba)
  | { kind: 'gray' | 'cmyk'; data: Uint8Array; width: number; height: number };

export interface TiffTags {
  xmp?: Uint8Array;
  icc?: Uint8Array;
}

const SHORT = 3, LONG = 4, RATIONAL = 5, UNDEFINED = 7, BYTE = 1;

interface Entry {
  tag: number;
  type: number;
  values: number[] | Uint8Array;
}

/** One TIFF file holding every page, in order. Little-endian, one Deflate strip per page. */
export function encodeTiff(pages: TiffPage[], tags: TiffTags = {}): Uint8Array {
  const chunks: Uint8Array[] = [];
  let offset = 8;
  const put = (b: Uint8Array) => {
    const at = offset;
    chunks.push(b);
    offset += b.length;
    if (offset & 1) {
      chunks.push(new Uint8Array(1));
      offset++;
    }
    return at;
  };
  const ifdOffsets: number[] = [];
  const ifdPatches: { at: number; entries: Entry[] }[] = [];
  for (const page of pages) {
    const spp = page.kind === 'gray' ? 1 : 4;
    const raw = page.kind === 'rgba' ? new Uint8Array(page.data.buffer, page.data.byteOffset, page.data.byteLength) : page.data;
    const strip = zlibSync(raw, { level: 6 });
    const stripAt = put(strip);
    const entries: Entry[] = [
      { tag: 256, type: LONG, values: [page.width] },
      { tag: 257, type: LONG, values: [page.height] },
      { tag: 258, type: SHORT, values: Array(spp).fill(8) },
      { tag: 259, type: SHORT, values: [8] }, // Adobe Deflate
      { tag: 262, type: SHORT, values: [page.kind === 'gray' ? 1 : page.kind === 'cmyk' ? 5 : 2] },
      { tag: 273, type: LONG, values: [stripAt] },
      { tag: 277, type: SHORT, values: [spp] },
      { tag: 278, type: LONG, values: [page.height] },
      { tag: 279, type: LONG, values: [strip.length] },
      { tag: 282, type: RATIONAL, values: [72, 1] },
      { tag: 283, type: RATIONAL, values: [72, 1] },
      { tag: 284, type: SHORT, values: [1] },
      { tag: 296, type: SHORT, values: [2] },
    ];
    if (page.kind === 'rgba') entries.push({ tag: 338, type: SHORT, values: [2] }); // unassociated alpha
    if (page.kind === 'cmyk') entries.push({ tag: 332, type: SHORT, values: [1] }); // InkSet CMYK
    if (tags.xmp) entries.push({ tag: 700, type: BYTE, values: tags.xmp });
    if (tags.icc) entries.push({ tag: 34675, type: UNDEFINED, values: tags.icc });
    entries.sort((a, b) => a.tag - b.tag);
    // out-of-line values first, then the directory
    const size = (e: Entry) => e.values.length * (e.type === SHORT ? 2 : e.type === LONG ? 4 : e.type === RATIONAL ? 4 : 1);
    const valueAt = new Map<Entry, number>();
    for (const e of entries) if (size(e) > 4) valueAt.set(e, put(bytesOf(e)));
    const ifd = new Uint8Array(2 + entries.length * 12 + 4);
    const dv = new DataView(ifd.buffer);
    dv.setUint16(0, entries.length, true);
    entries.forEach((e, k) => {
      const o = 2 + k * 12;
      dv.setUint16(o, e.tag, true);
      dv.setUint16(o + 2, e.type, true);
      dv.setUint32(o + 4, e.type === RATIONAL ? e.values.length / 2 : e.values.length, true);
      if (valueAt.has(e)) dv.setUint32(o + 8, valueAt.get(e)!, true);
      else ifd.set(bytesOf(e), o + 8);
    });
    const at = put(ifd);
    ifdOffsets.push(at);
    ifdPatches.push({ at, entries });
  }
  const out = new Uint8Array(offset);
  const dv = new DataView(out.buffer);
  out[0] = out[1] = 0x49;
  dv.setUint16(2, 42, true);
  dv.setUint32(4, ifdOffsets[0]!, true);
  let o = 8;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  ifdPatches.forEach((p, i) => dv.setUint32(p.at + 2 + p.entries.length * 12, ifdOffsets[i + 1] ?? 0, true));
  return out;
}

function bytesOf(e: Entry): Uint8Array {
  if (e.values instanceof Uint8Array) return e.values;
  const w = e.type === SHORT ? 2 : 4;
  const b = new Uint8Array(e.values.length * w);
  const dv = new DataView(b.buffer);
  e.values.forEach((v, i) => (w === 2 ? dv.setUint16(i * 2, v, true) : dv.setUint32(i * 4, v, true)));
  return b;
}
