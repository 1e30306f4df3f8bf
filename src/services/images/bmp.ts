/** BMP output: 32-bit BGRA, bottom-up, BITMAPV4HEADER so readers take the alpha channel. */
import type { Rgba } from './codecs.ts';

export function encodeBmp(img: Rgba): Uint8Array {
  const { width: w, height: h } = img;
  const header = 14 + 108;
  const size = header + w * h * 4;
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  out[0] = 0x42;
  out[1] = 0x4d;
  dv.setUint32(2, size, true);
  dv.setUint32(10, header, true);
  dv.setUint32(14, 108, true);
  dv.setInt32(18, w, true);
  dv.setInt32(22, h, true);
  dv.setUint16(26, 1, true);
  dv.setUint16(28, 32, true);
  dv.setUint32(30, 3, true); // BI_BITFIELDS
  dv.setUint32(34, w * h * 4, true);
  dv.setUint32(38, 2835, true);
  dv.setUint32(42, 2835, true);
  dv.setUint32(54, 0x00ff0000, true); // red mask
  dv.setUint32(58, 0x0000ff00, true);
  dv.setUint32(62, 0x000000ff, true);
  dv.setUint32(66, 0xff000000, true); // alpha mask
  dv.setUint32(70, 0x73524742, true); // 'sRGB'
  const d = img.data;
  for (let y = 0; y < h; y++) {
    let o = header + (h - 1 - y) * w * 4;
    for (let x = 0, i = y * w * 4; x < w; x++, i += 4, o += 4) {
      out[o] = d[i + 2]!;
      out[o + 1] = d[i + 1]!;
      out[o + 2] = d[i]!;
      out[o + 3] = d[i + 3]!;
    }
  }
  return out;
}
