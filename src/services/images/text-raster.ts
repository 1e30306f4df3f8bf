/**
 * Text drawn into a coverage mask with the shipped fonts: fontkit shapes each run (kerning, Arabic
 * joining), glyph outlines are flattened to polygons and filled with a non-zero-winding scanline
 * rasteriser (4 sub-rows per pixel, exact horizontal coverage). No native font stack is involved, so the
 * result is the same on every runtime.
 */
import fontkit from '@cantoo/fontkit';
import type { TextRun } from '../pdf/fonts.ts';

export interface Mask {
  /** coverage 0..255 */
  data: Uint8Array;
  width: number;
  height: number;
}

interface FkGlyph {
  path: { commands: { command: string; args: number[] }[] };
}
interface FkFont {
  unitsPerEm: number;
  ascent: number;
  descent: number;
  layout(text: string): { glyphs: FkGlyph[]; positions: { xAdvance: number; xOffset: number; yOffset: number }[] };
}

const fonts = new WeakMap<Uint8Array, FkFont>();
const fkFont = (bytes: Uint8Array) => {
  let f = fonts.get(bytes);
  if (!f) fonts.set(bytes, f = fontkit.create(bytes) as unknown as FkFont);
  return f;
};

type Poly = [number, number][];

/** Outline polygons of the text, in pixels, baseline at y = 0, y pointing down; plus the advance width. */
function outline(runs: TextRun[], size: number): { polys: Poly[]; width: number } {
  const polys: Poly[] = [];
  let pen = 0;
  for (const run of runs) {
    const font = fkFont(run.font.bytes);
    const k = size / font.unitsPerEm;
    const laid = font.layout(run.text);
    laid.glyphs.forEach((g, i) => {
      const pos = laid.positions[i]!;
      const ox = pen + pos.xOffset * k, oy = -pos.yOffset * k;
      let cur: Poly = [];
      let x = 0, y = 0;
      const to = (px: number, py: number) => {
        x = px;
        y = py;
        cur.push([ox + px * k, oy - py * k]);
      };
      for (const c of g.path.commands) {
        const a = c.args;
        if (c.command === 'moveTo') {
          if (cur.length > 2) polys.push(cur);
          cur = [];
          to(a[0]!, a[1]!);
        } else if (c.command === 'lineTo') to(a[0]!, a[1]!);
        else if (c.command === 'quadraticCurveTo') {
          const [x0, y0] = [x, y];
          for (let t = 1; t <= 8; t++) {
            const u = t / 8, v = 1 - u;
            to(v * v * x0 + 2 * v * u * a[0]! + u * u * a[2]!, v * v * y0 + 2 * v * u * a[1]! + u * u * a[3]!);
          }
        } else if (c.command === 'bezierCurveTo') {
          const [x0, y0] = [x, y];
          for (let t = 1; t <= 10; t++) {
            const u = t / 10, v = 1 - u;
            to(
              v * v * v * x0 + 3 * v * v * u * a[0]! + 3 * v * u * u * a[2]! + u * u * u * a[4]!,
              v * v * v * y0 + 3 * v * v * u * a[1]! + 3 * v * u * u * a[3]! + u * u * u * a[5]!,
            );
          }
        } else if (c.command === 'closePath') {
          if (cur.length > 2) polys.push(cur);
          cur = [];
        }
      }
      if (cur.length > 2) polys.push(cur);
      pen += pos.xAdvance * k;
    });
  }
  return { polys, width: pen };
}

/** Fills polygons (non-zero winding) into a mask of the given size. */
export function fillPolygons(polys: Poly[], width: number, height: number): Mask {
  const SUB = 4;
  const acc = new Float32Array(width * height);
  const edges: { x0: number; y0: number; x1: number; y1: number; dir: number }[] = [];
  for (const p of polys) {
    for (let i = 0; i < p.length; i++) {
      const [ax, ay] = p[i]!, [bx, by] = p[(i + 1) % p.length]!;
      if (ay === by) continue;
      edges.push(ay < by ? { x0: ax, y0: ay, x1: bx, y1: by, dir: 1 } : { x0: bx, y0: by, x1: ax, y1: ay, dir: -1 });
    }
  }
  edges.sort((a, b) => a.y0 - b.y0);
  const xs: { x: number; dir: number }[] = [];
  for (let row = 0; row < height; row++) {
    for (let s = 0; s < SUB; s++) {
      const sy = row + (s + 0.5) / SUB;
      xs.length = 0;
      for (const e of edges) {
        if (e.y0 > sy) break;
        if (e.y1 <= sy) continue;
        xs.push({ x: e.x0 + ((sy - e.y0) * (e.x1 - e.x0)) / (e.y1 - e.y0), dir: e.dir });
      }
      if (xs.length < 2) continue;
      xs.sort((a, b) => a.x - b.x);
      let wind = 0;
      for (let i = 0; i < xs.length - 1; i++) {
        wind += xs[i]!.dir;
        if (wind === 0) continue;
        span(acc, row * width, width, xs[i]!.x, xs[i + 1]!.x, 1 / SUB);
      }
    }
  }
  const data = new Uint8Array(width * height);
  for (let i = 0; i < data.length; i++) data[i] = Math.min(255, Math.round(acc[i]! * 255));
  return { data, width, height };
}

function span(acc: Float32Array, rowStart: number, width: number, a: number, b: number, weight: number) {
  a = Math.max(0, a);
  b = Math.min(width, b);
  if (b <= a) return;
  const ia = Math.floor(a), ib = Math.floor(b);
  if (ia === ib) {
    acc[rowStart + ia]! += (b - a) * weight;
    return;
  }
  acc[rowStart + ia]! += (ia + 1 - a) * weight;
  for (let x = ia + 1; x < ib; x++) acc[rowStart + x]! += weight;
  if (ib < width) acc[rowStart + ib]! += (b - ib) * weight;
}

/** Width in pixels of the text at `size`. */
export const textWidth = (runs: TextRun[], size: number) => outline(runs, size).width;

/**
 * The text rotated by `degrees` (counter-clockwise as seen) into its own tight mask.
 * The text's centre (half the advance, the middle of the cap height) is at the mask's centre.
 */
export function textMask(runs: TextRun[], size: number, degrees: number): Mask {
  const { polys, width } = outline(runs, size);
  const t = (-degrees * Math.PI) / 180, c = Math.cos(t), s = Math.sin(t);
  const mx = width / 2, my = -size * 0.35; // centre: half the advance, half the cap height (~0.7 em)
  const moved = polys.map((p) => p.map(([x, y]) => [c * (x - mx) - s * (y - my), s * (x - mx) + c * (y - my)] as [number, number]));
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const p of moved) {
    for (const [x, y] of p) {
      minX = Math.min(minX, x);
      minY = Math.min(minY, y);
      maxX = Math.max(maxX, x);
      maxY = Math.max(maxY, y);
    }
  }
  if (!Number.isFinite(minX)) return { data: new Uint8Array(1), width: 1, height: 1 };
  // symmetric box around the centre, so the caller can place the mask by its centre
  const hw = Math.ceil(Math.max(-minX, maxX)) + 1, hh = Math.ceil(Math.max(-minY, maxY)) + 1;
  const shifted = moved.map((p) => p.map(([x, y]) => [x + hw, y + hh] as [number, number]));
  return fillPolygons(shifted, 2 * hw, 2 * hh);
}
