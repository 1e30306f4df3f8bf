/**
 * Page orientation (0/90/180/270) and skew, measured on the ink before recognition.
 *
 * - Skew and the 0-or-90 question: projection profiles. Dark pixels are projected onto a rotated axis;
 *   text lines make the profile spiky, so the sum of squared bin counts peaks when the axis is
 *   perpendicular to the lines. Angles within ±MAX_SKEW of horizontal and of vertical are searched
 *   (coarse, then fine); the better family says whether the text runs across or down the image.
 * - Upright or upside down: in Latin script, ink above a line's x-height band (ascenders, capitals)
 *   outweighs ink below it (descenders). Lines vote; OCR confidence is not needed.
 */
import { type Gray, otsu, rotateGray, rotateQuarter, shrink } from './raster.ts';

export interface Orientation {
  /** clockwise rotation, in degrees, applied to make the page upright (0, 90, 180, 270) */
  rotation: 0 | 90 | 180 | 270;
  /** further clockwise rotation applied to level the lines (degrees, within ±MAX_SKEW) */
  deskew: number;
}

const MAX_SKEW = 15;

interface Ink {
  xs: Float32Array;
  ys: Float32Array;
  n: number;
  w: number;
  h: number;
}

function inkOf(g: Gray, maxPoints = 60_000): Ink | null {
  const factor = Math.max(1, Math.floor(Math.max(g.width, g.height) / 1200));
  const s = shrink(g, factor);
  const thr = Math.min(otsu(s), 200);
  let count = 0;
  for (let i = 0; i < s.data.length; i++) if (s.data[i]! < thr) count++;
  if (count < 50 || count > s.data.length * 0.6) return null;
  const step = Math.max(1, Math.ceil(count / maxPoints));
  const xs = new Float32Array(Math.ceil(count / step) + 1), ys = new Float32Array(xs.length);
  let n = 0, k = 0;
  for (let y = 0; y < s.height; y++) {
    for (let x = 0; x < s.width; x++) {
      if (s.data[y * s.width + x]! < thr && k++ % step === 0) {
        xs[n] = x;
        ys[n] = y;
        n++;
      }
    }
  }
  return { xs, ys, n, w: s.width, h: s.height };
}

/** Sharpness of the projection onto the axis at `deg` (0 = rows, i.e. horizontal lines). */
function profileScore(ink: Ink, deg: number): number {
  const t = (deg * Math.PI) / 180, c = Math.cos(t), s = Math.sin(t);
  const diag = Math.ceil(Math.hypot(ink.w, ink.h));
  const bins = new Float64Array(2 * diag + 2);
  for (let i = 0; i < ink.n; i++) {
    const v = ink.ys[i]! * c - ink.xs[i]! * s;
    bins[Math.round(v) + diag]!++;
  }
  let sq = 0;
  for (let i = 0; i < bins.length; i++) sq += bins[i]! * bins[i]!;
  return sq / ink.n;
}

function bestAngle(ink: Ink, center: number): { angle: number; score: number } {
  let best = { angle: center, score: -1 };
  for (let a = center - MAX_SKEW; a <= center + MAX_SKEW + 1e-9; a += 1) {
    const sc = profileScore(ink, a);
    if (sc > best.score) best = { angle: a, score: sc };
  }
  const c0 = best.angle;
  for (let a = c0 - 1; a <= c0 + 1 + 1e-9; a += 0.1) {
    const sc = profileScore(ink, a);
    if (sc > best.score) best = { angle: Math.round(a * 10) / 10, score: sc };
  }
  return best;
}

/** Ink above minus ink below each line's core band, summed over lines: > 0 means upright. */
export function uprightVote(g: Gray): number {
  const s = shrink(g, Math.max(1, Math.floor(Math.max(g.width, g.height) / 1600)));
  const thr = Math.min(otsu(s), 200);
  const rows = new Float64Array(s.height);
  for (let y = 0; y < s.height; y++) {
    let c = 0;
    for (let x = 0, o = y * s.width; x < s.width; x++) if (s.data[o + x]! < thr) c++;
    rows[y] = c;
  }
  let vote = 0;
  let y = 0;
  while (y < s.height) {
    if (rows[y]! === 0) {
      y++;
      continue;
    }
    const start = y;
    while (y < s.height && rows[y]! > 0) y++;
    const end = y; // [start, end) one text line (or a fragment)
    if (end - start < 4) continue;
    let max = 0;
    for (let i = start; i < end; i++) max = Math.max(max, rows[i]!);
    let top = -1, bottom = -1;
    for (let i = start; i < end; i++) {
      if (rows[i]! >= max * 0.5) {
        if (top < 0) top = i;
        bottom = i;
      }
    }
    let above = 0, below = 0;
    for (let i = start; i < top; i++) above += rows[i]!;
    for (let i = bottom + 1; i < end; i++) below += rows[i]!;
    vote += Math.sign(above - below) * Math.min(1, Math.abs(above - below) / (above + below + 1) * 4);
  }
  return vote;
}

/** Finds the rotation and skew, and returns the corrected image with them. */
export async function orientPage(
  g: Gray,
  opts: { detectOrientation?: boolean; deskew?: boolean } = {},
): Promise<{ image: Gray } & Orientation> {
  const doOrient = opts.detectOrientation ?? true, doDeskew = opts.deskew ?? true;
  const ink = inkOf(g);
  if (!ink || (!doOrient && !doDeskew)) return { image: g, rotation: 0, deskew: 0 };
  const across = doDeskew ? bestAngle(ink, 0) : { angle: 0, score: profileScore(ink, 0) };
  let quarter: 0 | 90 = 0;
  let angle = across.angle;
  if (doOrient) {
    const down = doDeskew ? bestAngle(ink, 90) : { angle: 90, score: profileScore(ink, 90) };
    if (down.score > across.score * 1.15) {
      quarter = 90;
      angle = down.angle;
    }
  }
  // `angle` is the direction (clockwise from horizontal) the lines run in; rotating by -angle levels them.
  let skew = quarter === 90 ? angle - 90 : angle;
  if (!doDeskew || Math.abs(skew) < 0.2) skew = 0;
  let image = quarter === 90 ? rotateQuarter(g, 270) : g; // lines running down become lines running across
  let rotation: 0 | 90 | 180 | 270 = quarter === 90 ? 270 : 0;
  if (skew !== 0) image = await rotateGray(image, -skew);
  if (doOrient && uprightVote(image) < 0) {
    image = rotateQuarter(image, 180);
    rotation = ((rotation + 180) % 360) as 0 | 90 | 180 | 270;
  }
  return { image, rotation, deskew: Math.round(-skew * 10) / 10 };
}
