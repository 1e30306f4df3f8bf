/**
 * What each token of a vocabulary does inside a plain JSON string (no pattern), from a given position (a
 * pending escape or UTF-8 tail): it stays inside (how many characters it adds, what closing it would then
 * still need), it closes the string at some byte (the rest is the automaton's), or it is not allowed.
 * Built once per vocabulary and position, so the allowed set of a string state is a pass over two arrays
 * instead of a walk of the vocabulary trie (most of the vocabulary may follow inside a string).
 */
import { stepPlainString } from './automaton.ts';
import type { Vocab } from './vocab.ts';

export interface StringTable {
  /** Tokens that stay inside the string. */
  inside: Int32Array;
  /** Characters each adds (maxLength). */
  chars: Int32Array;
  /** A pending escape or UTF-8 tail after it: bytes owed before the string may close. */
  owed: Uint8Array;
  /** Tokens with an unescaped quote that would close the string. */
  closing: Int32Array;
  /** Characters before that quote. */
  closingChars: Int32Array;
  /** Byte offset of that quote in the token. */
  quoteAt: Int32Array;
}

const tables = new WeakMap<Vocab, Map<string, StringTable>>();

export function stringTable(vocab: Vocab, esc: boolean, u8: number, lo: number, hi: number): StringTable {
  let byStart = tables.get(vocab);
  if (!byStart) tables.set(vocab, byStart = new Map());
  const key = `${esc ? 1 : 0}.${u8}.${lo}.${hi}`;
  let t = byStart.get(key);
  if (t) return t;
  const inside: number[] = [];
  const chars: number[] = [];
  const owed: number[] = [];
  const closing: number[] = [];
  const closingChars: number[] = [];
  const quoteAt: number[] = [];
  vocab.bytes.forEach((b, id) => {
    if (!b) return;
    const p = { min: 0, max: Infinity, len: 0, esc, u8, lo, hi };
    for (let i = 0; i < b.length; i++) {
      if (b[i] === 0x22 && !p.esc && p.u8 === 0) {
        closing.push(id);
        closingChars.push(p.len);
        quoteAt.push(i);
        return;
      }
      const r = stepPlainString(p, b[i]);
      if (!r) return;
      [p.len, p.esc, p.u8, p.lo, p.hi] = r;
    }
    inside.push(id);
    chars.push(p.len);
    owed.push((p.esc ? 1 : 0) + p.u8);
  });
  t = {
    inside: Int32Array.from(inside),
    chars: Int32Array.from(chars),
    owed: Uint8Array.from(owed),
    closing: Int32Array.from(closing),
    closingChars: Int32Array.from(closingChars),
    quoteAt: Int32Array.from(quoteAt),
  };
  byStart.set(key, t);
  return t;
}
