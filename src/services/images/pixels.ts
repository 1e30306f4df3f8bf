/**
 * Pixel operations on RGBA, pure functions: EXIF orientation, resize (sharp when present, else photon's
 * Lanczos3 in WASM), rotation by any angle, gray.
 */
import type { Engine, Rgba } from './codecs.ts';
import { sharpFor } from './codecs.ts';

/** Applies an EXIF orientation (1..8) so the pixels are upright. */
export function applyOrientation(img: Rgba, o: number): Rgba {
  if (o <= 1 || o > 8) return img;
  const { width: w, height: h, data } = img;
  const swap = o >= 5;
  const W = swap ? h : w, H = swap ? w : h;
  const out = new Uint8ClampedArray(W * H * 4);
  const src = new Uint32Array(data.buffer, data.byteOffset, w * h);
  const dst = new Uint32Array(out.buffer);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      let sx: number, sy: number;
      switch (o) {
        case 2:
          sx = w - 1 - x;
          sy = y;
          break;
        case 3:
          sx = w - 1 - x;
          sy = h - 1 - y;
          break;
        case 4:
          sx = x;
          sy = h - 1 - y;
          break;
        case 5:
          sx = y;
          sy = x;
          break;
        case 6:
          sx = y;
          sy = h - 1 - x;
          break;
        case 7:
          sx = w - 1 - y;
          sy = h - 1 - x;
          break;
        default:
          sx = w - 1 - y;
          sy = x;
          break; // 8
      }
      dst[y * W + x] = src[sy * w + sx]!;
    }
  }
  return { data: out, width: W, height: H };
}

/** Resamples to exactly width × height (Lanczos3). */
export async function resize(img: Rgba, width: number, height: number, engine: Engine = 'auto'): Promise<Rgba> {
  if (width === img.width && height === img.height) return img;
  const sharp = await sharpFor(engine);
  if (sharp) {
    const { data, info } = await sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } })
      .resize(width, height, { fit: 'fill', kernel: 'lanczos3' }).raw().toBuffer({ resolveWithObject: true });
    return { data: new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  }
  const photon = await import('@cf-wasm/photon');
  const p = new photon.PhotonImage(new Uint8Array(img.data.buffer, img.data.byteOffset, img.data.byteLength), img.width, img.height);
  try {
    const r = photon.resize(p, width, height, photon.SamplingFilter.Lanczos3);
    try {
      return { data: new Uint8ClampedArray(r.get_raw_pixels()), width: r.get_width(), height: r.get_height() };
    } finally {
      r.free();
    }
  } finally {
    p.free();
  }
}

/** Rotates clockwise by `degrees` around the centre (bilinear), the canvas grown to fit, new area filled with `fill`. */
export function rotate(img: Rgba, degrees: number, fill: [number, number, number, number] = [255, 255, 255, 255]): Rgba {
  const d = ((degrees % 360) + 360) % 360;
  if (d === 0) return img;
  if (d === 90) return applyOrientation(img, 6);
  if (d === 180) return applyOrientation(img, 3);
  if (d === 270) return applyOrientation(img, 8);
  const t = (degrees * Math.PI) / 180, c = Math.cos(t), s = Math.sin(t);
  const { width: w, height: h, data } = img;
  const W = Math.ceil(Math.abs(w * c) + Math.abs(h * s) - 1e-6), H = Math.ceil(Math.abs(w * s) + Math.abs(h * c) - 1e-6);
  const out = new Uint8ClampedArray(W * H * 4);
  const cx = w / 2, cy = h / 2, CX = W / 2, CY = H / 2;
  const px = (xx: number, yy: number, k: number) => (xx >= 0 && yy >= 0 && xx < w && yy < h ? data[(yy * w + xx) * 4 + k]! : fill[k]!);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      // inverse map: destination -> source (rotate by -t)
      const dx = x + 0.5 - CX, dy = y + 0.5 - CY;
      const sx = c * dx + s * dy + cx - 0.5, sy = -s * dx + c * dy + cy - 0.5;
      const o = (y * W + x) * 4;
      const x0 = Math.floor(sx), y0 = Math.floor(sy), fx = sx - x0, fy = sy - y0;
      if (x0 >= 0 && y0 >= 0 && x0 + 1 < w && y0 + 1 < h) {
        const i00 = (y0 * w + x0) * 4, i10 = i00 + 4, i01 = i00 + w * 4, i11 = i01 + 4;
        for (let k = 0; k < 4; k++) {
          out[o + k] = (data[i00 + k]! * (1 - fx) + data[i10 + k]! * fx) * (1 - fy) +
            (data[i01 + k]! * (1 - fx) + data[i11 + k]! * fx) * fy;
        }
      } else {
        for (let k = 0; k < 4; k++) {
          out[o + k] = (px(x0, y0, k) * (1 - fx) + px(x0 + 1, y0, k) * fx) * (1 - fy) +
            (px(x0, y0 + 1, k) * (1 - fx) + px(x0 + 1, y0 + 1, k) * fx) * fy;
        }
      }
    }
  }
  return { data: out, width: W, height: H };
}

/** Luma (BT.709) over white, one byte per pixel. */
export function grayOf(img: Rgba): Uint8Array {
  const n = img.width * img.height, d = img.data;
  const out = new Uint8Array(n);
  for (let i = 0, j = 0; i < n; i++, j += 4) {
    const a = d[j + 3]! / 255;
    out[i] = (0.2126 * d[j]! + 0.7152 * d[j + 1]! + 0.0722 * d[j + 2]!) * a + 255 * (1 - a);
  }
  return out;
}

/** The same image with every pixel gray (alpha kept). */
export function toGrayRgba(img: Rgba): Rgba {
  const out = new Uint8ClampedArray(img.data);
  for (let i = 0; i < out.length; i += 4) out[i] = out[i + 1] = out[i + 2] = 0.2126 * out[i]! + 0.7152 * out[i + 1]! + 0.0722 * out[i + 2]!;
  return { data: out, width: img.width, height: img.height };
}

/** Target size for `size` (longest edge, or a box) keeping the aspect ratio; never larger than the master unless `upscale`. */
export function fitSize(
  w: number,
  h: number,
  box: { width?: number; height?: number },
  fit: 'inside' | 'fill',
  upscale: boolean,
): { width: number; height: number } {
  if (!box.width && !box.height) return { width: w, height: h };
  if (fit === 'fill' && box.width && box.height) {
    if (upscale) return { width: box.width, height: box.height };
    return { width: Math.min(w, box.width), height: Math.min(h, box.height) };
  }
  let scale = Math.min(box.width ? box.width / w : Infinity, box.height ? box.height / h : Infinity);
  if (!upscale) scale = Math.min(scale, 1);
  return { width: Math.max(1, Math.round(w * scale)), height: Math.max(1, Math.round(h * scale)) };
}
