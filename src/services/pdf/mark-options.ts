/**
 * What the PDF watermark and the image watermark share: the layouts and corners, the longest text, the
 * checks of the options both take and their defaults, and `#rrggbb` colours (docs/api/pdf.md, docs/api/images.md).
 */
import { invalidArgument } from '../errors.ts';

export type WatermarkLayout = 'tiled' | 'centered' | 'corner';
export type Corner = 'top-left' | 'top-right' | 'bottom-left' | 'bottom-right';
export const LAYOUTS: WatermarkLayout[] = ['tiled', 'centered', 'corner'];
export const CORNERS: Corner[] = ['top-left', 'top-right', 'bottom-left', 'bottom-right'];
export const MAX_TEXT_LENGTH = 500;

/** The options both marks take (sizes are in the caller's unit: points or pixels). */
export interface MarkChoices {
  text?: string;
  layout?: WatermarkLayout;
  corner?: Corner;
  /** 0 < opacity <= 1, default 0.3 */
  opacity?: number;
  /** degrees counter-clockwise; default 45 (tiled, centered) or 0 (corner) */
  rotation?: number;
  fontSize?: number;
  /** #rrggbb, default #808080 */
  color?: string;
  logoWidth?: number;
}

/**
 * Checks the shared options before any page or pixel is touched and fills their defaults; `prefix` is how
 * the caller's API names the mark in messages ("" or "watermark ").
 */
export function checkMark(w: MarkChoices, hasLogo: boolean, prefix: string) {
  const layout = w.layout ?? 'centered';
  if (!LAYOUTS.includes(layout)) throw invalidArgument(`${prefix}layout: tiled, centered or corner.`);
  const corner = w.corner ?? 'bottom-right';
  if (!CORNERS.includes(corner)) throw invalidArgument(`${prefix}corner: top-left, top-right, bottom-left or bottom-right.`);
  if (!w.text && !hasLogo) throw invalidArgument(`${prefix}give text or a logo.`);
  if (w.text && [...w.text].length > MAX_TEXT_LENGTH) throw invalidArgument(`${prefix}text: at most ${MAX_TEXT_LENGTH} characters.`);
  const opacity = w.opacity ?? 0.3;
  if (!(opacity > 0 && opacity <= 1)) throw invalidArgument(`${prefix}opacity: greater than 0, at most 1.`);
  const rotation = w.rotation ?? (layout === 'corner' ? 0 : 45);
  if (!Number.isFinite(rotation)) throw invalidArgument(`${prefix}rotation: degrees.`);
  return { layout, corner, opacity, rotation, color: parseColor(w.color ?? '#808080') };
}

/** `#rrggbb` (the `#` optional) → [r, g, b] from 0 to 255. */
export function parseColor(s: string): [number, number, number] {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(s.trim());
  if (!m) throw invalidArgument(`colour ${JSON.stringify(s)}: #rrggbb.`);
  return [parseInt(m[1]!, 16), parseInt(m[2]!, 16), parseInt(m[3]!, 16)];
}
