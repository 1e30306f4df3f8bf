/**
 * A small ECMAScript-regex → DFA compiler for JSON Schema `pattern` and `format`, so a string's content can be
 * constrained byte by byte. The alphabet is printable ASCII (0x20–0x7e): constrained strings never contain
 * characters outside it, nor `"` or `\` (they would need escapes), which keeps every generated string a member
 * of the pattern's language. Supported: literals, escapes (\d \w \s and their negations, \xHH, \uHHHH), classes,
 * `.`, groups (capturing, non-capturing, named), alternation, greedy and lazy quantifiers, `^`/`$` at the ends of
 * a top-level alternative, and lookaheads right after a leading `^` (compiled by intersection/complement).
 * Anything else (backreferences, lookbehind, word boundaries, Unicode property escapes, anchors inside) is
 * refused by name. JSON Schema patterns are unanchored: an alternative without `^`/`$` may have anything before
 * or after it.
 */
import { unsupportedSchema } from './schema-error.ts';

export const SIGMA = 95; // printable ASCII 0x20..0x7e
const LO = 0x20;
const MAX_NFA = 20000;
const MAX_DFA = 4000;

type CharSet = Uint8Array; // SIGMA flags
type Ast =
  | { t: 'set'; set: CharSet }
  | { t: 'seq'; items: Ast[] }
  | { t: 'alt'; items: Ast[] }
  | { t: 'rep'; item: Ast; min: number; max: number }
  | { t: 'look'; neg: boolean; body: Ast }
  | { t: 'bol' }
  | { t: 'eol' };

export interface Dfa {
  /** next[q * SIGMA + c] = state, or -1. State 0 is the start. */
  next: Int32Array;
  accept: Uint8Array;
  /** Shortest path to an accepting state (after `prune`, finite for every live state). */
  dist: Int32Array;
  size: number;
}

const emptySet = () => new Uint8Array(SIGMA);
const fullSet = () => new Uint8Array(SIGMA).fill(1);
const setOf = (...codes: number[]) => {
  const s = emptySet();
  for (const c of codes) if (c >= LO && c < LO + SIGMA) s[c - LO] = 1;
  return s;
};
const rangeSet = (a: number, b: number, s = emptySet()) => {
  for (let c = Math.max(a, LO); c <= Math.min(b, LO + SIGMA - 1); c++) s[c - LO] = 1;
  return s;
};
const negate = (s: CharSet) => s.map((v) => 1 - v);
const union = (a: CharSet, b: CharSet) => a.map((v, i) => v | b[i]);
const DIGIT = rangeSet(0x30, 0x39);
const WORD = union(union(rangeSet(0x30, 0x39), rangeSet(0x41, 0x5a)), union(rangeSet(0x61, 0x7a), setOf(0x5f)));
const SPACE = setOf(0x20);

class Parser {
  i = 0;
  constructor(readonly src: string, readonly what: string) {}
  fail(feature: string): never {
    throw unsupportedSchema(`${feature} in the ${this.what} /${this.src}/`);
  }
  peek() {
    return this.src[this.i];
  }
  parseAlt(): Ast {
    const items = [this.parseSeq()];
    while (this.peek() === '|') {
      this.i++;
      items.push(this.parseSeq());
    }
    return items.length === 1 ? items[0] : { t: 'alt', items };
  }
  parseSeq(): Ast {
    const items: Ast[] = [];
    while (this.i < this.src.length && this.peek() !== '|' && this.peek() !== ')') {
      let atom = this.parseAtom();
      for (;;) {
        const q = this.parseQuant();
        if (!q) break;
        if (atom.t === 'bol' || atom.t === 'eol' || atom.t === 'look') this.fail('a quantified anchor or lookahead');
        atom = { t: 'rep', item: atom, min: q[0], max: q[1] };
      }
      items.push(atom);
    }
    return { t: 'seq', items };
  }
  parseQuant(): [number, number] | undefined {
    const c = this.peek();
    let q: [number, number] | undefined;
    if (c === '*') q = [0, Infinity];
    else if (c === '+') q = [1, Infinity];
    else if (c === '?') q = [0, 1];
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return undefined;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      if (max < min) this.fail('a quantifier {n,m} with m < n');
      this.i += m[0].length - 1;
      q = [min, max];
    }
    if (!q) return undefined;
    this.i++;
    if (this.peek() === '?') this.i++; // lazy: same language
    return q;
  }
  parseAtom(): Ast {
    const c = this.src[this.i++];
    switch (c) {
      case '^':
        return { t: 'bol' };
      case '$':
        return { t: 'eol' };
      case '.':
        return { t: 'set', set: fullSet() };
      case '[':
        return { t: 'set', set: this.parseClass() };
      case '(': {
        let look: boolean | undefined;
        if (this.src.startsWith('?:', this.i)) this.i += 2;
        else if (this.src.startsWith('?=', this.i) || this.src.startsWith('?!', this.i)) {
          look = this.src[this.i + 1] === '!';
          this.i += 2;
        } else if (this.src.startsWith('?<=', this.i) || this.src.startsWith('?<!', this.i)) this.fail('a lookbehind');
        else if (this.src.startsWith('?<', this.i)) {
          const end = this.src.indexOf('>', this.i);
          if (end < 0) this.fail('an unterminated group name');
          this.i = end + 1;
        } else if (this.peek() === '?') this.fail('a group modifier (?…)');
        const body = this.parseAlt();
        if (this.src[this.i++] !== ')') this.fail('an unbalanced parenthesis');
        return look === undefined ? body : { t: 'look', neg: look, body };
      }
      case ')':
        return this.fail('an unbalanced parenthesis');
      case '\\':
        return { t: 'set', set: this.parseEscape(false) };
      case '*':
      case '+':
      case '?':
        return this.fail('a quantifier with nothing to repeat');
      default: {
        const cp = this.src.codePointAt(this.i - 1)!;
        if (cp > 0xffff) this.i++;
        return { t: 'set', set: setOf(cp) };
      }
    }
  }
  parseEscape(inClass: boolean): CharSet {
    const c = this.src[this.i++];
    if (c === undefined) this.fail('a trailing backslash');
    switch (c) {
      case 'd':
        return DIGIT.slice();
      case 'D':
        return negate(DIGIT);
      case 'w':
        return WORD.slice();
      case 'W':
        return negate(WORD);
      case 's':
        return SPACE.slice();
      case 'S':
        return negate(SPACE);
      case 't':
      case 'n':
      case 'r':
      case 'f':
      case 'v':
      case '0':
        return emptySet(); // control characters: never generated
      case 'b':
        if (inClass) return emptySet();
        return this.fail('a word boundary \\b');
      case 'B':
        return this.fail('a word boundary \\B');
      case 'p':
      case 'P':
        return this.fail('a Unicode property escape');
      case 'k':
        return this.fail('a named backreference');
      case 'c':
        this.i++;
        return emptySet();
      case 'x': {
        const h = /^[0-9a-fA-F]{2}/.exec(this.src.slice(this.i));
        if (!h) this.fail('a malformed \\x escape');
        this.i += 2;
        return setOf(parseInt(h[0], 16));
      }
      case 'u': {
        const h = /^(?:\{([0-9a-fA-F]+)\}|([0-9a-fA-F]{4}))/.exec(this.src.slice(this.i));
        if (!h) this.fail('a malformed \\u escape');
        this.i += h[0].length;
        return setOf(parseInt(h[1] ?? h[2], 16));
      }
      default:
        if (/[1-9]/.test(c)) this.fail('a backreference');
        return setOf(c.charCodeAt(0));
    }
  }
  parseClass(): CharSet {
    let neg = false;
    if (this.peek() === '^') {
      neg = true;
      this.i++;
    }
    let set = emptySet();
    while (this.i < this.src.length && this.peek() !== ']') {
      const a = this.classAtom();
      if (this.peek() === '-' && this.src[this.i + 1] !== ']' && this.i + 1 < this.src.length && typeof a === 'number') {
        this.i++;
        const b = this.classAtom();
        if (typeof b !== 'number') this.fail('a class range ending in a class escape');
        if (b < a) this.fail('a class range out of order');
        rangeSet(a, b, set);
      } else if (typeof a === 'number') set = union(set, setOf(a));
      else set = union(set, a);
    }
    if (this.src[this.i++] !== ']') this.fail('an unterminated character class');
    return neg ? negate(set) : set;
  }
  /** A code point, or a set for class escapes (\d, \w, ...). */
  classAtom(): number | CharSet {
    const c = this.src[this.i];
    if (c === '\\') {
      this.i++;
      const e = this.src[this.i];
      if ('dDwWsSpP'.includes(e)) return this.parseEscape(true);
      const s = this.parseEscape(true);
      const idx = s.indexOf(1);
      if (idx < 0) return -1; // a control character: an endpoint outside the alphabet
      return idx + LO;
    }
    const cp = this.src.codePointAt(this.i)!;
    this.i += cp > 0xffff ? 2 : 1;
    return cp;
  }
}

// ---------- NFA (Thompson) ----------

class Nfa {
  eps: number[][] = [];
  edges: { set: CharSet; to: number }[][] = [];
  add(): number {
    if (this.eps.length >= MAX_NFA) throw unsupportedSchema('a pattern or format too large to compile (too many repetitions)');
    this.eps.push([]);
    this.edges.push([]);
    return this.eps.length - 1;
  }
  /** Builds ast between fresh start/end states. */
  build(a: Ast, p: Parser): [number, number] {
    const s = this.add();
    const e = this.add();
    switch (a.t) {
      case 'set':
        this.edges[s].push({ set: a.set, to: e });
        break;
      case 'seq': {
        let cur = s;
        for (const it of a.items) {
          if (it.t === 'bol' || it.t === 'eol') p.fail('an anchor (^ or $) inside the pattern');
          if (it.t === 'look') p.fail('a lookahead that is not at the start of the pattern');
          const [is, ie] = this.build(it, p);
          this.eps[cur].push(is);
          cur = ie;
        }
        this.eps[cur].push(e);
        break;
      }
      case 'alt':
        for (const it of a.items) {
          const [is, ie] = this.build(it, p);
          this.eps[s].push(is);
          this.eps[ie].push(e);
        }
        break;
      case 'rep': {
        let cur = s;
        for (let k = 0; k < a.min; k++) {
          const [is, ie] = this.build(a.item, p);
          this.eps[cur].push(is);
          cur = ie;
        }
        if (a.max === Infinity) {
          const [is, ie] = this.build(a.item, p);
          this.eps[cur].push(is, e);
          this.eps[ie].push(is, e);
        } else {
          for (let k = a.min; k < a.max; k++) {
            const [is, ie] = this.build(a.item, p);
            this.eps[cur].push(is, e);
            cur = ie;
          }
        }
        this.eps[cur].push(e);
        break;
      }
      default:
        p.fail('an anchor or lookahead inside a group');
    }
    return [s, e];
  }
}

function closure(n: Nfa, states: number[]): number[] {
  const seen = new Set(states);
  const stack = [...states];
  while (stack.length) for (const t of n.eps[stack.pop()!]) if (!seen.has(t)) (seen.add(t), stack.push(t));
  return [...seen].sort((a, b) => a - b);
}

function determinize(n: Nfa, start: number, end: number): Dfa {
  const index = new Map<string, number>();
  const sets: number[][] = [];
  const next: number[] = [];
  const accept: number[] = [];
  const intern = (set: number[]) => {
    const key = set.join(',');
    let q = index.get(key);
    if (q === undefined) {
      if (sets.length >= MAX_DFA) throw unsupportedSchema('a pattern or format too large to compile (its automaton has too many states)');
      q = sets.length;
      index.set(key, q);
      sets.push(set);
      accept.push(set.includes(end) ? 1 : 0);
      for (let c = 0; c < SIGMA; c++) next.push(-1);
    }
    return q;
  };
  intern(closure(n, [start]));
  for (let q = 0; q < sets.length; q++) {
    const targets: number[][] = Array.from({ length: SIGMA }, () => []);
    for (const s of sets[q]) for (const ed of n.edges[s]) for (let c = 0; c < SIGMA; c++) if (ed.set[c]) targets[c].push(ed.to);
    for (let c = 0; c < SIGMA; c++) if (targets[c].length) next[q * SIGMA + c] = intern(closure(n, targets[c]));
  }
  return { next: Int32Array.from(next), accept: Uint8Array.from(accept), dist: new Int32Array(sets.length), size: sets.length };
}

/** Pairwise product of two DFAs; `mode` decides acceptance. A missing transition is a dead (rejecting) state. */
export function product(a: Dfa, b: Dfa, mode: 'and' | 'or' | 'andNot'): Dfa {
  const index = new Map<number, number>();
  const pairs: [number, number][] = [];
  const next: number[] = [];
  const accept: number[] = [];
  const DEAD = -1;
  const intern = (x: number, y: number) => {
    const key = (x + 1) * (b.size + 1) + (y + 1);
    let q = index.get(key);
    if (q === undefined) {
      if (pairs.length >= MAX_DFA) throw unsupportedSchema('a pattern or format too large to compile (its automaton has too many states)');
      q = pairs.length;
      index.set(key, q);
      pairs.push([x, y]);
      const ax = x >= 0 && a.accept[x] === 1;
      const by = y >= 0 && b.accept[y] === 1;
      accept.push(mode === 'and' ? (ax && by ? 1 : 0) : mode === 'or' ? (ax || by ? 1 : 0) : ax && !by ? 1 : 0);
      for (let c = 0; c < SIGMA; c++) next.push(-1);
    }
    return q;
  };
  intern(0, 0);
  for (let q = 0; q < pairs.length; q++) {
    const [x, y] = pairs[q];
    for (let c = 0; c < SIGMA; c++) {
      const nx = x >= 0 ? a.next[x * SIGMA + c] : DEAD;
      const ny = y >= 0 ? b.next[y * SIGMA + c] : DEAD;
      const live = mode === 'and' ? nx >= 0 && ny >= 0 : mode === 'or' ? nx >= 0 || ny >= 0 : nx >= 0;
      if (live) next[q * SIGMA + c] = intern(nx, ny);
    }
  }
  return { next: Int32Array.from(next), accept: Uint8Array.from(accept), dist: new Int32Array(pairs.length), size: pairs.length };
}

function nfaDfa(ast: Ast, p: Parser, prefixAny: boolean, suffixAny: boolean): Dfa {
  const n = new Nfa();
  const parts: Ast[] = [];
  const any: Ast = { t: 'rep', item: { t: 'set', set: fullSet() }, min: 0, max: Infinity };
  if (prefixAny) parts.push(any);
  parts.push(ast);
  if (suffixAny) parts.push(any);
  const [s, e] = n.build({ t: 'seq', items: parts }, p);
  return determinize(n, s, e);
}

/** One top-level alternative: leading ^, lookaheads after it, the body, trailing $. */
function alternativeDfa(seq: Ast, p: Parser, within?: Dfa): Dfa {
  const items = seq.t === 'seq' ? [...seq.items] : [seq];
  const bol = items[0]?.t === 'bol';
  if (bol) items.shift();
  const looks: (Ast & { t: 'look' })[] = [];
  while (bol && items[0]?.t === 'look') looks.push(items.shift() as Ast & { t: 'look' });
  const eol = items.at(-1)?.t === 'eol';
  if (eol) items.pop();
  let dfa = nfaDfa({ t: 'seq', items }, p, !bol, !eol);
  // Intersect early: a format's narrow language keeps the lookahead products small.
  if (within) dfa = product(within, dfa, 'and');
  for (const l of looks) {
    // (?=X) at the start: the text is in X·Σ*, with X's own trailing $ anchoring it.
    const alts = l.body.t === 'alt' ? l.body.items : [l.body];
    let ld: Dfa | undefined;
    for (const alt of alts) {
      const its = alt.t === 'seq' ? [...alt.items] : [alt];
      const end = its.at(-1)?.t === 'eol';
      if (end) its.pop();
      const d = nfaDfa({ t: 'seq', items: its }, p, false, !end);
      ld = ld ? product(ld, d, 'or') : d;
    }
    dfa = product(dfa, ld!, l.neg ? 'andNot' : 'and');
  }
  return dfa;
}

/** The language of an ECMAScript pattern as JSON Schema uses it (unanchored search), over printable ASCII. */
export function patternDfa(src: string, what = 'pattern', within?: Dfa): Dfa {
  const p = new Parser(src, what);
  const ast = p.parseAlt();
  if (p.i < src.length) p.fail('an unbalanced parenthesis');
  const alts = ast.t === 'alt' ? ast.items : [ast];
  let dfa: Dfa | undefined;
  for (const a of alts) {
    const d = alternativeDfa(a, p, within);
    dfa = dfa ? product(dfa, d, 'or') : d;
  }
  return dfa!;
}

/**
 * Drops `"` and `\` (they would need escapes), computes each state's distance to acceptance, and cuts
 * transitions into states that can no longer accept. Throws when nothing printable matches.
 */
export function prune(d: Dfa, what: string): Dfa {
  const next = d.next.slice();
  for (let q = 0; q < d.size; q++) {
    next[q * SIGMA + (0x22 - LO)] = -1;
    next[q * SIGMA + (0x5c - LO)] = -1;
  }
  const dist = new Int32Array(d.size).fill(0x3fffffff);
  const rev: number[][] = Array.from({ length: d.size }, () => []);
  for (let q = 0; q < d.size; q++) for (let c = 0; c < SIGMA; c++) if (next[q * SIGMA + c] >= 0) rev[next[q * SIGMA + c]].push(q);
  const queue: number[] = [];
  for (let q = 0; q < d.size; q++) if (d.accept[q]) (dist[q] = 0, queue.push(q));
  for (let h = 0; h < queue.length; h++) {
    const q = queue[h];
    for (const r of rev[q]) if (dist[r] > dist[q] + 1) (dist[r] = dist[q] + 1, queue.push(r));
  }
  if (dist[0] >= 0x3fffffff) {
    throw unsupportedSchema(`a ${what} that no string of printable ASCII characters (other than " and \\) can match`);
  }
  for (let i = 0; i < next.length; i++) if (next[i] >= 0 && dist[next[i]] >= 0x3fffffff) next[i] = -1;
  return { next, accept: d.accept, dist, size: d.size };
}

/**
 * Shortest accepted continuation from state q that is at least r characters long (minLength), or Infinity.
 * Memoized per DFA.
 */
export function shortestAtLeast(d: Dfa, q: number, r: number, memo: Map<number, number>): number {
  if (r <= 0) return d.dist[q];
  const key = q * 100003 + r;
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  let cur = new Set([q]);
  for (let k = 0; k < r && cur.size; k++) {
    const nx = new Set<number>();
    for (const s of cur) {
      for (let c = 0; c < SIGMA; c++) {
        const t = d.next[s * SIGMA + c];
        if (t >= 0) nx.add(t);
      }
    }
    cur = nx;
  }
  let best = Infinity;
  for (const s of cur) best = Math.min(best, r + d.dist[s]);
  memo.set(key, best);
  return best;
}

export function stepDfa(d: Dfa, q: number, b: number): number {
  return b >= LO && b < LO + SIGMA ? d.next[q * SIGMA + (b - LO)] : -1;
}
