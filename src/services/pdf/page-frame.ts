/**
 * The coordinate convention of every box this service reads or writes (layout, search, redact rects,
 * crop): points (1/72 in), origin at the TOP-LEFT of the page as displayed, i.e. after /Rotate and
 * within the CropBox, x to the right and y downwards. A page rendered at D dpi maps 1 point to D/72 pixels,
 * so boxes land on the rendered image directly. PageFrame converts to and from PDF user space
 * (origin bottom-left of the unrotated MediaBox, y up).
 */
import { invalidArgument } from '../errors.ts';

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export class PageFrame {
  /** displayed width and height in points */
  readonly width: number;
  readonly height: number;
  constructor(
    readonly left: number,
    readonly bottom: number,
    readonly right: number,
    readonly top: number,
    /** clockwise quarter turns, 0..3 */
    readonly quarterTurns: number,
  ) {
    const w = right - left;
    const h = top - bottom;
    [this.width, this.height] = quarterTurns % 2 ? [h, w] : [w, h];
  }

  static of(box: { left: number; bottom: number; right: number; top: number }, rotationDegrees: number): PageFrame {
    const q = ((Math.round(rotationDegrees / 90) % 4) + 4) % 4;
    return new PageFrame(
      Math.min(box.left, box.right),
      Math.min(box.bottom, box.top),
      Math.max(box.left, box.right),
      Math.max(box.bottom, box.top),
      q,
    );
  }

  /** user space point -> display point */
  toDisplay(x: number, y: number): [number, number] {
    switch (this.quarterTurns) {
      case 1:
        return [y - this.bottom, x - this.left];
      case 2:
        return [this.right - x, y - this.bottom];
      case 3:
        return [this.top - y, this.right - x];
      default:
        return [x - this.left, this.top - y];
    }
  }

  /** display point -> user space point */
  toUser(X: number, Y: number): [number, number] {
    switch (this.quarterTurns) {
      case 1:
        return [Y + this.left, X + this.bottom];
      case 2:
        return [this.right - X, Y + this.bottom];
      case 3:
        return [this.right - Y, this.top - X];
      default:
        return [X + this.left, this.top - Y];
    }
  }

  /** user-space rectangle (any corner order) -> display box */
  boxFromUser(l: number, b: number, r: number, t: number): Box {
    const [x1, y1] = this.toDisplay(l, b);
    const [x2, y2] = this.toDisplay(r, t);
    return round({ x: Math.min(x1, x2), y: Math.min(y1, y2), width: Math.abs(x2 - x1), height: Math.abs(y2 - y1) });
  }

  /** display box -> user-space {left,bottom,right,top} */
  userFromBox(b: Box): { left: number; bottom: number; right: number; top: number } {
    const [x1, y1] = this.toUser(b.x, b.y);
    const [x2, y2] = this.toUser(b.x + b.width, b.y + b.height);
    return { left: Math.min(x1, x2), bottom: Math.min(y1, y2), right: Math.max(x1, x2), top: Math.max(y1, y2) };
  }

  /** 400 invalid_argument unless the box is a positive-size rectangle inside the page. */
  assertInside(b: Box, what: string): void {
    const ok = [b.x, b.y, b.width, b.height].every(Number.isFinite) && b.width > 0 && b.height > 0;
    const eps = 0.01;
    if (!ok || b.x < -eps || b.y < -eps || b.x + b.width > this.width + eps || b.y + b.height > this.height + eps) {
      throw invalidArgument(
        `${what}: rectangle ${JSON.stringify(b)} is not inside the page (${this.width.toFixed(2)} x ${
          this.height.toFixed(2)
        } pt, origin top-left).`,
      );
    }
  }
}

const r2 = (n: number) => Math.round(n * 100) / 100;
const round = (b: Box): Box => ({ x: r2(b.x), y: r2(b.y), width: r2(b.width), height: r2(b.height) });
