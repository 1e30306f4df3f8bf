/**
 * The width and height an image declares in its header (PNG, JPEG, GIF, BMP, WebP, TIFF), read without
 * decoding, so a pixel bomb is refused before a codec allocates for it. null when the format is not one of
 * these (the codec then answers in its own words).
 */
export interface Size {
  width: number;
  height: number;
}

export function imageSize(b: Uint8Array): Size | null {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const at = (i: number, s: string) => s.split('').every((ch, k) => b[i + k] === ch.charCodeAt(0));
  if (b.length >= 24 && b[0] === 0x89 && at(1, 'PNG')) return { width: dv.getUint32(16), height: dv.getUint32(20) };
  if (b.length >= 10 && at(0, 'GIF8')) return { width: dv.getUint16(6, true), height: dv.getUint16(8, true) };
  if (b.length >= 26 && at(0, 'BM')) return { width: Math.abs(dv.getInt32(18, true)), height: Math.abs(dv.getInt32(22, true)) };
  if (b.length >= 30 && at(0, 'RIFF') && at(8, 'WEBP')) return webp(b, dv);
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) return jpeg(b, dv);
  if (b.length >= 8 && (at(0, 'II*\0') || at(0, 'MM\0*'))) return tiff(dv, b[0] === 0x49);
  return null;
}

function webp(b: Uint8Array, dv: DataView): Size | null {
  const kind = String.fromCharCode(b[12]!, b[13]!, b[14]!, b[15]!);
  if (kind === 'VP8X') {
    return { width: 1 + (b[24]! | (b[25]! << 8) | (b[26]! << 16)), height: 1 + (b[27]! | (b[28]! << 8) | (b[29]! << 16)) };
  }
  if (kind === 'VP8L') {
    const bits = dv.getUint32(21, true);
    return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
  }
  if (kind === 'VP8 ') return { width: dv.getUint16(26, true) & 0x3fff, height: dv.getUint16(28, true) & 0x3fff };
  return null;
}

function jpeg(b: Uint8Array, dv: DataView): Size | null {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++;
      continue;
    }
    // SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { width: dv.getUint16(i + 7), height: dv.getUint16(i + 5) };
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      i += 2;
      continue;
    }
    i += 2 + dv.getUint16(i + 2);
  }
  return null;
}

/** The largest page of a TIFF (every IFD, at most 1000 of them). */
function tiff(dv: DataView, le: boolean): Size | null {
  let best: Size | null = null;
  let off = dv.getUint32(4, le);
  for (let n = 0; n < 1000 && off > 0 && off + 2 <= dv.byteLength; n++) {
    const count = dv.getUint16(off, le);
    let width = 0;
    let height = 0;
    for (let k = 0; k < count; k++) {
      const e = off + 2 + k * 12;
      if (e + 12 > dv.byteLength) break;
      const tag = dv.getUint16(e, le);
      const type = dv.getUint16(e + 2, le);
      const value = type === 3 ? dv.getUint16(e + 8, le) : dv.getUint32(e + 8, le);
      if (tag === 256) width = value;
      else if (tag === 257) height = value;
    }
    if (!best || width * height > best.width * best.height) best = { width, height };
    const next = off + 2 + count * 12;
    off = next + 4 <= dv.byteLength ? dv.getUint32(next, le) : 0;
  }
  return best;
}
