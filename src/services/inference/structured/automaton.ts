/**
 * A byte-level pushdown automaton over grammar nodes (schema.ts). A state is a set of stacks (one per live
 * alternative of an anyOf); frames are immutable, so a state can branch while a token trie is walked.
 *
 *   step(stack, byte)  → successor stacks (none: the byte is not allowed)
 *   atEnd(stack)       → the text so far is one complete document
 *   closeLen(stack)    → bytes of the shortest completion from here (drives the budget-aware close)
 *
 * Output is compact JSON with at most one space after ':' and ','; strings are valid UTF-8, escapes are the
 * two-character ones (no \u), control characters never appear raw; numbers have no exponent and bounded
 * digits, so every path ends.
 */
import { itemAt, minLengths, type Node, type Prop } from './schema.ts';
import { shortestAtLeast, stepDfa } from './regex.ts';
import { advanceNum, type NumPos, restLen, valueInRange } from './number-range.ts';

const Q = 0x22; // "
const BS = 0x5c; // backslash
const SP = 0x20;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACK = 0x5b;
const RBRACK = 0x5d;
const MAX_INT_DIGITS = 15;
const MAX_FRAC_DIGITS = 6;
const ESCAPES = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;

type StrNode = Node & { k: 'str' };
type Frame =
  | { t: 'root'; node: Node; pre: Uint8Array; post: Uint8Array; ph: number; pos: number }
  | { t: 'obj'; n: Node & { k: 'obj' }; ph: number; i: number; cur: number; kb: number; cands: number[] }
  | { t: 'arr'; n: Node & { k: 'arr' }; ph: number; count: number }
  | { t: 'str'; n: StrNode; ph: number; len: number; esc: boolean; u8: number; lo: number; hi: number; q: number }
  | { t: 'num'; n: Node & { k: 'num' }; ph: number; digits: number; pos?: NumPos }
  | { t: 'lit'; n: Node & { k: 'lit' }; pos: number; alive: number[] };

export interface Stack {
  f: Frame;
  up: Stack | null;
}

const KEY_NODE: StrNode = { k: 'str', id: -1, min: 0, max: Infinity };

export class Grammar {
  readonly root: Node;
  readonly #len: Map<number, number>;

  constructor(root: Node, readonly pre: Uint8Array = new Uint8Array(), readonly post: Uint8Array = new Uint8Array()) {
    this.root = root;
    this.#len = minLengths(root);
    this.#len.set(KEY_NODE.id, 2);
  }

  /** Shortest JSON text length of a node. */
  minLen(n: Node): number {
    return this.#len.get(n.id)!;
  }

  initial(): Stack[] {
    const f: Frame = { t: 'root', node: this.root, pre: this.pre, post: this.post, ph: this.pre.length ? 0 : 1, pos: 0 };
    const s: Stack = { f, up: null };
    return f.ph === 1 ? pushValue(s, this.root) : [s];
  }

  step(s: Stack, b: number): Stack[] {
    const f = s.f;
    const up = s.up;
    switch (f.t) {
      case 'root': {
        if (f.ph === 0) {
          if (f.pre[f.pos] !== b) return [];
          if (f.pos + 1 < f.pre.length) return [{ f: { ...f, pos: f.pos + 1 }, up }];
          return pushValue({ f: { ...f, ph: 1, pos: 0 }, up }, f.node);
        }
        if (f.ph === 2 && f.post[f.pos] === b) {
          return [{ f: f.pos + 1 < f.post.length ? { ...f, pos: f.pos + 1 } : { ...f, ph: 3, pos: 0 }, up }];
        }
        return [];
      }
      case 'str':
        return this.#stepStr(f, up!, b);
      // deno-lint-ignore no-fallthrough -- every branch of the inner switch returns
      case 'num': {
        const n = f.n;
        if (n.range) {
          const pos = f.pos!;
          const np = advanceNum(pos, b, n.int);
          const out: Stack[] = np && Number.isFinite(restLen(n.range, np)) ? [{ f: { ...f, ph: np.ph, pos: np }, up }] : [];
          if (!np && valueInRange(n.range, pos)) return this.step(childDone(up!), b);
          return out;
        }
        const next = (ph: number, digits = f.digits): Stack[] => [{ f: { ...f, ph, digits }, up }];
        const end = (): Stack[] => (f.ph === 2 || f.ph === 3 || f.ph === 5 ? this.step(childDone(up!), b) : []);
        switch (f.ph) {
          case 0:
            if (b === MINUS && !n.nonNeg) return next(1);
            if (b === ZERO && !n.positive) return next(2, 1);
            return b > ZERO && isDigit(b) ? next(3, 1) : [];
          case 1:
            if (b === ZERO) return next(2, 1);
            return b > ZERO && isDigit(b) ? next(3, 1) : [];
          case 2:
          case 3:
            if (f.ph === 3 && isDigit(b) && f.digits < MAX_INT_DIGITS) return next(3, f.digits + 1);
            if (b === DOT && !n.int) return next(4, 0);
            return end();
          case 4:
            return isDigit(b) ? next(5, 1) : [];
          default:
            if (isDigit(b) && f.digits < MAX_FRAC_DIGITS) return next(5, f.digits + 1);
            return end();
        }
      }
      case 'lit': {
        const texts = f.n.texts;
        const alive = f.alive.filter((i) => texts[i][f.pos] === b);
        const out: Stack[] = alive.length ? [{ f: { ...f, pos: f.pos + 1, alive }, up }] : [];
        if (f.alive.some((i) => texts[i].length === f.pos)) out.push(...this.step(childDone(up!), b));
        return out;
      }
      case 'arr': {
        const n = f.n;
        const item = (): Stack[] => pushValue({ f: { ...f, ph: 2 }, up }, itemAt(n, f.count)).flatMap((st) => this.step(st, b));
        switch (f.ph) {
          case 0:
            return b === LBRACK ? [{ f: { ...f, ph: 1 }, up }] : [];
          case 1:
            if (b === RBRACK) return n.min === 0 ? [childDone(up!)] : [];
            return n.max > 0 && b !== SP ? item() : [];
          case 3:
            if (b === COMMA && f.count < n.max) return [{ f: { ...f, ph: 4 }, up }];
            if (b === RBRACK && f.count >= n.min) return [childDone(up!)];
            return [];
          case 4:
            if (b === SP) return [{ f: { ...f, ph: 5 }, up }];
            return item();
          case 5:
            return b === SP ? [] : item();
          default:
            return [];
        }
      }
      case 'obj':
        return this.#stepObj(f, up!, b);
    }
  }

  #stepStr(f: Frame & { t: 'str' }, up: Stack, b: number): Stack[] {
    const n = f.n;
    const me = (g: Partial<Frame & { t: 'str' }>): Stack[] => [{ f: { ...f, ...g }, up }];
    if (f.ph === 0) return b === Q ? me({ ph: 1 }) : [];
    if (b === Q && !f.esc && f.u8 === 0) return f.len >= n.min && (!n.dfa || n.dfa.accept[f.q]) ? [childDone(up)] : [];
    if (n.dfa) {
      if (f.len >= n.max) return [];
      const q = stepDfa(n.dfa, f.q, b);
      if (q < 0 || shortestAtLeast(n.dfa, q, n.min - f.len - 1, n.memo!) > n.max - f.len - 1) return [];
      return me({ len: f.len + 1, q });
    }
    const r = stepPlainString({ min: n.min, max: n.max, len: f.len, esc: f.esc, u8: f.u8, lo: f.lo, hi: f.hi }, b);
    return r ? me({ len: r[0], esc: r[1], u8: r[2], lo: r[3], hi: r[4] }) : [];
  }

  #stepObj(f: Frame & { t: 'obj' }, up: Stack, b: number): Stack[] {
    const n = f.n;
    const me = (g: Partial<Frame & { t: 'obj' }>): Stack[] => [{ f: { ...f, ...g }, up }];
    const startKey = (): Stack[] => {
      if (n.free) {
        return [{
          f: { t: 'str', n: n.keys ?? KEY_NODE, ph: 1, len: 0, esc: false, u8: 0, lo: 0, hi: 0, q: 0 },
          up: { f: { ...f, ph: 10 }, up },
        }];
      }
      const cands = candidates(n.props, f.i);
      return cands.length ? me({ ph: 2, kb: 0, cands }) : [];
    };
    const value = (): Stack[] => {
      const node = n.free ?? n.props[f.cur].node;
      return pushValue({ f: { ...f, ph: 6 }, up }, node).flatMap((st) => this.step(st, b));
    };
    switch (f.ph) {
      case 0:
        return b === LBRACE ? me({ ph: 1 }) : [];
      case 1:
        if (b === RBRACE) return noRequiredFrom(n.props, f.i) ? [childDone(up)] : [];
        return b === Q ? startKey() : [];
      case 2: {
        const out: Stack[] = [];
        if (b === Q) {
          const j = f.cands.find((c) => n.props[c].keyBytes.length === f.kb);
          if (j !== undefined) out.push(...me({ ph: 3, cur: j, i: j + 1, cands: [] }));
        }
        const cands = f.cands.filter((c) => n.props[c].keyBytes[f.kb] === b);
        if (cands.length) out.push(...me({ kb: f.kb + 1, cands }));
        return out;
      }
      case 3:
        return b === COLON ? me({ ph: 4 }) : [];
      case 4:
        return b === SP ? me({ ph: 5 }) : value();
      case 5:
        return b === SP ? [] : value();
      case 7:
        if (b === COMMA) return n.free || candidates(n.props, f.i).length ? me({ ph: 8 }) : [];
        if (b === RBRACE) return noRequiredFrom(n.props, f.i) ? [childDone(up)] : [];
        return [];
      case 8:
        if (b === SP) return me({ ph: 9 });
        return b === Q ? startKey() : [];
      case 9:
        return b === Q ? startKey() : [];
      default:
        return [];
    }
  }

  /** The text so far is a complete document (implicitly ended numbers/literals are closed here). */
  atEnd(s: Stack): boolean {
    const f = s.f;
    if (f.t === 'root') return f.ph === 3;
    if (f.t === 'num' && (f.ph === 2 || f.ph === 3 || f.ph === 5) && (!f.n.range || valueInRange(f.n.range, f.pos!))) {
      return this.atEnd(childDone(s.up!));
    }
    if (f.t === 'lit' && f.alive.some((i) => f.n.texts[i].length === f.pos)) return this.atEnd(childDone(s.up!));
    return false;
  }

  /** Bytes of the shortest completion of this stack. */
  closeLen(s: Stack): number {
    let total = this.#rest(s.f);
    for (let p = s.up; p; p = p.up) total += this.#afterChild(p.f);
    return total;
  }

  /** Bytes to finish the top frame from where it stands. */
  #rest(f: Frame): number {
    switch (f.t) {
      case 'root':
        return f.ph === 0 ? f.pre.length - f.pos + this.minLen(f.node) + f.post.length : f.ph === 2 ? f.post.length - f.pos : 0;
      case 'str':
        if (f.ph === 0) return this.minLen(f.n);
        if (f.n.dfa) return shortestAtLeast(f.n.dfa, f.q, f.n.min - f.len, f.n.memo!) + 1;
        return plainStringRest(f.n.min, f.len, f.esc, f.u8);
      case 'num':
        if (f.n.range) return restLen(f.n.range, f.pos!);
        return f.ph === 0 || f.ph === 1 || f.ph === 4 ? 1 : 0;
      case 'lit':
        return Math.min(...f.alive.map((i) => f.n.texts[i].length - f.pos));
      case 'arr':
        if (f.ph === 0) return this.minLen(f.n);
        if (f.ph === 1) return this.#arrTail(f.n, 0, true);
        if (f.ph === 3) return this.#arrTail(f.n, f.count, false);
        return this.minLen(itemAt(f.n, f.count)) + this.#arrTail(f.n, f.count + 1, false);
      case 'obj': {
        const n = f.n;
        switch (f.ph) {
          case 0:
            return this.minLen(n);
          case 1:
            return this.#objTail(n, f.i, true);
          case 2:
            return Math.min(
              ...f.cands.map((j) => n.props[j].keyBytes.length - f.kb + 2 + this.minLen(n.props[j].node) + this.#objTail(n, j + 1, false)),
            );
          case 3:
            return 1 + this.minLen(n.free ?? n.props[f.cur].node) + this.#objTail(n, f.i, false);
          case 4:
          case 5:
            return this.minLen(n.free ?? n.props[f.cur].node) + this.#objTail(n, f.i, false);
          case 7:
            return this.#objTail(n, f.i, false);
          default: // 8, 9: after a comma, one more member is owed
            return this.#objAfterComma(n, f.i);
        }
      }
    }
  }

  /** Bytes to finish a frame whose child value just completed. */
  #afterChild(f: Frame): number {
    switch (f.t) {
      case 'root':
        return f.post.length;
      case 'arr':
        return this.#arrTail(f.n, f.count + 1, false);
      case 'obj':
        if (f.ph === 10) return 1 + this.minLen(f.n.free!) + 1; // free key done: ':' value '}'
        return this.#objTail(f.n, f.i, false);
      default:
        return 0;
    }
  }

  #arrTail(n: Node & { k: 'arr' }, count: number, first: boolean): number {
    const owed = Math.max(0, n.min - count);
    let total = Math.max(0, owed - (first ? 1 : 0)) + 1;
    for (let i = count; i < n.min; i++) total += this.minLen(itemAt(n, i));
    return total;
  }

  /** Remaining required members from index i, then '}'. */
  #objTail(n: Node & { k: 'obj' }, i: number, first: boolean): number {
    let total = 1;
    let lead = !first;
    for (let j = i; j < n.props.length; j++) {
      const p = n.props[j];
      if (!p.req) continue;
      total += (lead ? 1 : 0) + memberLen(p, this);
      lead = true;
    }
    return total;
  }

  #objAfterComma(n: Node & { k: 'obj' }, i: number): number {
    if (n.free) return this.minLen(n.keys ?? KEY_NODE) + 1 + this.minLen(n.free) + 1; // "k":v}
    if (!noRequiredFrom(n.props, i)) return this.#objTail(n, i, true);
    return Math.min(...n.props.slice(i).map((p) => memberLen(p, this))) + 1;
  }
}

function memberLen(p: Prop, g: Grammar): number {
  return p.keyBytes.length + 3 + g.minLen(p.node);
}

/** Properties that may come next: every one from i up to and including the first required one. */
function candidates(props: Prop[], i: number): number[] {
  const out: number[] = [];
  for (let j = i; j < props.length; j++) {
    out.push(j);
    if (props[j].req) break;
  }
  return out;
}

function noRequiredFrom(props: Prop[], i: number): boolean {
  for (let j = i; j < props.length; j++) if (props[j].req) return false;
  return true;
}

/** The parent after its child value completed. */
function childDone(up: Stack): Stack {
  const f = up.f;
  switch (f.t) {
    case 'root':
      return { f: f.post.length ? { ...f, ph: 2, pos: 0 } : { ...f, ph: 3, pos: 0 }, up: up.up };
    case 'arr':
      return { f: { ...f, ph: 3, count: f.count + 1 }, up: up.up };
    case 'obj':
      return { f: { ...f, ph: f.ph === 10 ? 3 : 7 }, up: up.up };
    default:
      throw new Error(`constrained decoding: ${f.t} frame cannot hold a child`);
  }
}

/** Start frames for a value of `node` (one stack per anyOf alternative). */
function pushValue(up: Stack, node: Node): Stack[] {
  switch (node.k) {
    case 'any':
      return node.alts.flatMap((a) => pushValue(up, a));
    case 'obj':
      return [{ f: { t: 'obj', n: node, ph: 0, i: 0, cur: -1, kb: 0, cands: [] }, up }];
    case 'arr':
      return [{ f: { t: 'arr', n: node, ph: 0, count: 0 }, up }];
    case 'str':
      return [{ f: { t: 'str', n: node, ph: 0, len: 0, esc: false, u8: 0, lo: 0, hi: 0, q: 0 }, up }];
    case 'num':
      return [{ f: { t: 'num', n: node, ph: 0, digits: 0, pos: node.range && { neg: false, ph: 0, I: 0n, di: 0, F: 0n, nf: 0 } }, up }];
    case 'lit':
      return [{ f: { t: 'lit', n: node, pos: 0, alive: node.texts.map((_, i) => i) }, up }];
  }
}

/** A position inside a string without a pattern automaton (the vocabulary walk steps these without the stack). */
export interface PlainString {
  min: number;
  max: number;
  len: number;
  esc: boolean;
  u8: number;
  lo: number;
  hi: number;
}

/** The top of `s` as a plain-string position, when it is one. */
export function plainStringTop(s: Stack): PlainString | undefined {
  const f = s.f;
  return f.t === 'str' && f.ph === 1 && !f.n.dfa
    ? { min: f.n.min, max: f.n.max, len: f.len, esc: f.esc, u8: f.u8, lo: f.lo, hi: f.hi }
    : undefined;
}

/** `s` with its plain-string top moved to another position. */
export function atPlainString(s: Stack, p: { len: number; esc: boolean; u8: number; lo: number; hi: number }): Stack {
  const f = s.f as Frame & { t: 'str' };
  return { f: { ...f, len: p.len, esc: p.esc, u8: p.u8, lo: p.lo, hi: p.hi }, up: s.up };
}

/** Bytes to close a plain string from a position: a pending escape or UTF-8 tail, the characters owed, '"'. */
export function plainStringRest(min: number, len: number, esc: boolean, u8: number): number {
  return (esc ? 1 : 0) + u8 + Math.max(0, min - len) + 1;
}

/**
 * One byte inside a plain string, as `step` takes it (the closing quote excepted: the caller hands that to
 * `step`); [len, esc, u8, lo, hi] after it, or undefined when the byte is not allowed there.
 */
export function stepPlainString(p: PlainString, b: number): [number, boolean, number, number, number] | undefined {
  if (p.esc) return ESCAPES.has(b) ? [p.len, false, p.u8, p.lo, p.hi] : undefined;
  if (p.u8 > 0) return b >= p.lo && b <= p.hi ? [p.len, false, p.u8 - 1, 0x80, 0xbf] : undefined;
  if (p.len >= p.max) return undefined;
  const len = p.len + 1;
  if (b === BS) return [len, true, 0, p.lo, p.hi];
  if (b < 0x20) return undefined;
  if (b < 0x80) return [len, false, 0, p.lo, p.hi];
  if (b >= 0xc2 && b <= 0xdf) return [len, false, 1, 0x80, 0xbf];
  if (b === 0xe0) return [len, false, 2, 0xa0, 0xbf];
  if (b === 0xed) return [len, false, 2, 0x80, 0x9f];
  if (b >= 0xe1 && b <= 0xef) return [len, false, 2, 0x80, 0xbf];
  if (b === 0xf0) return [len, false, 3, 0x90, 0xbf];
  if (b >= 0xf1 && b <= 0xf3) return [len, false, 3, 0x80, 0xbf];
  if (b === 0xf4) return [len, false, 3, 0x80, 0x8f];
  return undefined;
}

/** A string that identifies a stack's future (equal keys ⇒ equal allowed continuations). */
export function stackKey(s: Stack | null): string {
  let out = '';
  for (let p = s; p; p = p.up) {
    const f = p.f;
    switch (f.t) {
      case 'root':
        out += `R${f.ph}.${f.pos}|`;
        break;
      case 'obj':
        out += `O${f.n.id}.${f.ph}.${f.i}.${f.cur}.${f.kb}.${f.cands.join(',')}|`;
        break;
      case 'arr':
        out += `A${f.n.id}.${f.ph}.${Number.isFinite(f.n.max) ? f.count : Math.min(f.count, Math.max(f.n.min, f.n.prefix?.length ?? 0))}|`;
        break;
      case 'str': {
        const len = Number.isFinite(f.n.max) ? f.len : Math.min(f.len, f.n.min);
        out += `S${f.n.id}.${f.ph}.${len}.${f.esc ? 1 : 0}.${f.u8}.${f.lo}.${f.hi}.${f.q}|`;
        break;
      }
      case 'num':
        out += f.pos
          ? `N${f.n.id}.${f.pos.neg ? '-' : ''}${f.pos.ph}.${f.pos.I}.${f.pos.di}.${f.pos.F}.${f.pos.nf}|`
          : `N${f.n.id}.${f.ph}.${f.digits}|`;
        break;
      case 'lit':
        out += `L${f.n.id}.${f.pos}.${f.alive.join(',')}|`;
        break;
    }
  }
  return out;
}
