/**
 * imageColorPalette: the dominant colours with their shares. k-means in RGB over up to 40 000 pixels
 * sampled on a regular grid (transparent pixels left out), seeded by farthest-point selection so the
 * answer is deterministic; each pixel then counts for its nearest centre.
 */
import { invalidArgument } from '../errors.ts';
import type { Rgba } from './codecs.ts';
import { loadPage, type PageOptions } from './load.ts';

export interface PaletteColour {
  hex: string;
  rgb: [number, number, number];
  share: number;
}

const hex = (c: number[]) => `#${c.map((x) => Math.round(x).toString(16).padStart(2, '0')).join('')}`;

export function paletteOf(img: Rgba, count: number): PaletteColour[] {
  const n = img.width * img.height;
  const step = Math.max(1, Math.floor(n / 40_000));
  const pts: number[] = [];
  for (let i = 0; i < n; i += step) if (img.data[i * 4 + 3]! >= 128) pts.push(img.data[i * 4]!, img.data[i * 4 + 1]!, img.data[i * 4 + 2]!);
  const m = pts.length / 3;
  if (!m) return [];
  const d2 = (i: number, c: number[]) => (pts[i * 3]! - c[0]!) ** 2 + (pts[i * 3 + 1]! - c[1]!) ** 2 + (pts[i * 3 + 2]! - c[2]!) ** 2;
  // seeds: the mean, then repeatedly the point farthest from every seed so far
  const mean = [0, 1, 2].map((k) => {
    let s = 0;
    for (let i = 0; i < m; i++) s += pts[i * 3 + k]!;
    return s / m;
  });
  const centres: number[][] = [];
  let far = 0, best = -1;
  for (let i = 0; i < m; i++) {
    const d = d2(i, mean);
    if (d > best) {
      best = d;
      far = i;
    }
  }
  centres.push([pts[far * 3]!, pts[far * 3 + 1]!, pts[far * 3 + 2]!]);
  const nearest = new Float64Array(m).fill(Infinity);
  while (centres.length < count) {
    const c = centres[centres.length - 1]!;
    let fi = -1, fd = 0;
    for (let i = 0; i < m; i++) {
      nearest[i] = Math.min(nearest[i]!, d2(i, c));
      if (nearest[i]! > fd) {
        fd = nearest[i]!;
        fi = i;
      }
    }
    if (fi < 0 || fd < 1) break; // fewer distinct colours than asked
    centres.push([pts[fi * 3]!, pts[fi * 3 + 1]!, pts[fi * 3 + 2]!]);
  }
  const assign = new Int32Array(m);
  for (let iter = 0; iter < 15; iter++) {
    const sums = centres.map(() => [0, 0, 0, 0]);
    for (let i = 0; i < m; i++) {
      let bi = 0, bd = Infinity;
      for (let k = 0; k < centres.length; k++) {
        const d = d2(i, centres[k]!);
        if (d < bd) {
          bd = d;
          bi = k;
        }
      }
      assign[i] = bi;
      const s = sums[bi]!;
      s[0]! += pts[i * 3]!;
      s[1]! += pts[i * 3 + 1]!;
      s[2]! += pts[i * 3 + 2]!;
      s[3]!++;
    }
    let moved = 0;
    sums.forEach((s, k) => {
      if (s[3]) {
        const c = [s[0]! / s[3], s[1]! / s[3], s[2]! / s[3]];
        moved += Math.abs(c[0]! - centres[k]![0]!) + Math.abs(c[1]! - centres[k]![1]!) + Math.abs(c[2]! - centres[k]![2]!);
        centres[k] = c;
      }
    });
    if (moved < 0.5) break;
  }
  const counts = centres.map(() => 0);
  for (let i = 0; i < m; i++) counts[assign[i]!]!++;
  return centres
    .map((c, k) => ({
      hex: hex(c),
      rgb: c.map(Math.round) as [number, number, number],
      share: Math.round((counts[k]! / m) * 10000) / 10000,
    }))
    .filter((c) => c.share > 0)
    .sort((a, b) => b.share - a.share);
}

export async function imageColorPalette(bytes: Uint8Array, o: PageOptions & { count?: number }) {
  const count = o.count ?? 5;
  if (!(Number.isInteger(count) && count >= 1 && count <= 32)) throw invalidArgument('count: 1 to 32 colours.');
  const page = await loadPage(bytes, o);
  return { width: page.img.width, height: page.img.height, page_index: page.pageIndex, colors: paletteOf(page.img, count) };
}
