/**
 * Bounded numbers (minimum/maximum, exclusive or not, integer multipleOf) for constrained decoding. Values are
 * fixed-point BigInts (integers: units; numbers: millionths, the automaton's six fraction digits), so a bound
 * check is exact. For a number prefix the shortest completion that can still land inside the range is found
 * by trying each count of further integer digits and fraction digits: a prefix is allowed only while one exists.
 */
export const MAX_INT_DIGITS = 15;
export const MAX_FRAC_DIGITS = 6;

export interface NumRange {
  /** Scale of the fixed point: 1 for integers, 10^6 for numbers. */
  scale: bigint;
  lo?: bigint;
  hi?: bigint;
  /** Integers only: values are multiples of this. */
  mult?: bigint;
}

/** Where a number's text stands: int part I (di digits), after '.', fraction F (nf digits). */
export interface NumPos {
  neg: boolean;
  /** 0 start, 1 after '-', 2 a lone leading zero, 3 int digits, 4 after '.', 5 fraction digits */
  ph: number;
  I: bigint;
  di: number;
  F: bigint;
  nf: number;
}

const P10 = Array.from({ length: 40 }, (_, i) => 10n ** BigInt(i));

/** v·scale rounded up ('ceil') or down ('floor'), exactly, from the number's shortest decimal form. */
export function scaled(v: number, scale: bigint, mode: 'ceil' | 'floor'): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(v));
  if (!m) throw new Error(`not a finite number: ${v}`);
  const digits = BigInt(m[2] + (m[3] ?? ''));
  const exp = Number(m[4] ?? 0) - (m[3]?.length ?? 0);
  let num = digits * scale;
  let den = 1n;
  if (exp >= 0) num *= 10n ** BigInt(exp);
  else den = 10n ** BigInt(-exp);
  const neg = m[1] === '-';
  let q = num / den;
  const exact = q * den === num;
  if (!exact) {
    // toward -inf or +inf with the sign in mind
    if (neg ? mode === 'floor' : mode === 'ceil') q += 1n;
  }
  return neg ? -q : q;
}

function hasMultiple(a: bigint, b: bigint, r: NumRange, neg: boolean, step: bigint): boolean {
  // magnitudes [a, b] of the sign `neg`, mapped into the signed range
  let lo = a;
  let hi = b;
  if (neg) {
    if (r.hi !== undefined) lo = lo > -r.hi ? lo : -r.hi;
    if (r.lo !== undefined) hi = hi < -r.lo ? hi : -r.lo;
  } else {
    if (r.lo !== undefined) lo = lo > r.lo ? lo : r.lo;
    if (r.hi !== undefined) hi = hi < r.hi ? hi : r.hi;
  }
  if (lo > hi || hi < 0n) return false;
  if (lo < 0n) lo = 0n;
  const st = r.mult ? lcm(step, r.mult) : step;
  return (hi / st) * st >= lo;
}

function lcm(a: bigint, b: bigint): bigint {
  let x = a;
  let y = b;
  while (y) [x, y] = [y, x % y];
  return (a / x) * b;
}

export function valueInRange(r: NumRange, p: NumPos): boolean {
  if (p.ph !== 2 && p.ph !== 3 && p.ph !== 5) return false;
  const mag = p.I * r.scale + (p.nf ? p.F * (r.scale / P10[p.nf]) : 0n);
  return hasMultiple(mag, mag, r, p.neg, 1n);
}

/** Bytes of the shortest completion inside the range (0: may end here), or Infinity. */
export function restLen(r: NumRange, p: NumPos): number {
  const int = r.scale === 1n;
  switch (p.ph) {
    case 0: {
      let best = Infinity;
      for (const neg of [false, true]) for (let d = 0; d <= 9; d++) best = Math.min(best, 1 + (neg ? 1 : 0) + restLen(r, digitPos(neg, d)));
      return best;
    }
    case 1: {
      let best = Infinity;
      for (let d = 0; d <= 9; d++) best = Math.min(best, 1 + restLen(r, digitPos(true, d)));
      return best;
    }
    case 2:
    case 3: {
      if (valueInRange(r, p)) return 0;
      let best = Infinity;
      const maxK = p.ph === 2 ? 0 : MAX_INT_DIGITS - p.di;
      for (let k = 0; k <= maxK; k++) {
        for (let f = 0; f <= (int ? 0 : MAX_FRAC_DIGITS); f++) {
          const len = k + (f ? f + 1 : 0);
          if (len === 0 || len >= best) continue;
          const a = p.I * P10[k] * r.scale;
          const b = (p.I + 1n) * P10[k] * r.scale - 1n;
          const step = int ? 1n : r.scale / P10[f];
          if (hasMultiple(a, b, r, p.neg, step)) best = len;
        }
      }
      return best;
    }
    case 4:
    case 5: {
      if (p.ph === 5 && valueInRange(r, p)) return 0;
      const unit = r.scale / P10[p.nf];
      const base = (p.I * P10[p.nf] + p.F) * unit;
      for (let g = 1; p.nf + g <= MAX_FRAC_DIGITS; g++) {
        if (hasMultiple(base, base + unit - 1n, r, p.neg, r.scale / P10[p.nf + g])) return g;
      }
      return Infinity;
    }
    default:
      return Infinity;
  }
}

function digitPos(neg: boolean, d: number): NumPos {
  return { neg, ph: d === 0 ? 2 : 3, I: BigInt(d), di: 1, F: 0n, nf: 0 };
}

/** The position after byte b, or undefined when b cannot extend the number text (range not considered). */
export function advanceNum(p: NumPos, b: number, int: boolean): NumPos | undefined {
  const isDigit = b >= 0x30 && b <= 0x39;
  const d = b - 0x30;
  switch (p.ph) {
    case 0:
      if (b === 0x2d) return { ...p, neg: true, ph: 1 };
      return isDigit ? digitPos(false, d) : undefined;
    case 1:
      return isDigit ? digitPos(true, d) : undefined;
    case 2:
    case 3:
      if (p.ph === 3 && isDigit && p.di < MAX_INT_DIGITS) return { ...p, I: p.I * 10n + BigInt(d), di: p.di + 1 };
      if (b === 0x2e && !int) return { ...p, ph: 4 };
      return undefined;
    case 4:
    case 5:
      if (isDigit && p.nf < MAX_FRAC_DIGITS) return { ...p, ph: 5, F: p.F * 10n + BigInt(d), nf: p.nf + 1 };
      return undefined;
    default:
      return undefined;
  }
}
