/**
 * The bytes each token of a tokenizer writes, and a prefix trie over them, for constrained decoding.
 * Byte-level BPE (GPT-2/Qwen/Llama 3) maps its vocabulary characters back to bytes; SentencePiece-style
 * vocabularies turn '▁' into a space and `<0xNN>` into the byte. Special tokens are never part of the trie
 * (only EOS is allowed, once the document is complete). Cached per tokenizer.
 */
import type { PreTrainedTokenizer } from '@huggingface/transformers';

export interface TrieNode {
  children: Map<number, TrieNode>;
  tokens: number[];
}

export interface Vocab {
  /** Bytes written by each token id; null for special or unusable tokens. */
  bytes: (Uint8Array | null)[];
  trie: TrieNode;
  /** Single-byte tokens exist for every byte value (the budget-aware close counts bytes as tokens). */
  byteComplete: boolean;
  missingBytes: number[];
}

interface TokenizerJson {
  model?: { type?: string; vocab?: Record<string, number> | [string, number][]; byte_fallback?: boolean };
  decoder?: { type?: string; decoders?: { type?: string }[] } | null;
  added_tokens?: { id: number; content: string; special: boolean }[];
}

const cache = new WeakMap<object, Vocab>();
const enc = new TextEncoder();

function byteLevelTable(): Map<string, number> {
  // GPT-2 bytes_to_unicode
  const bs: number[] = [];
  for (let i = 33; i <= 126; i++) bs.push(i);
  for (let i = 161; i <= 172; i++) bs.push(i);
  for (let i = 174; i <= 255; i++) bs.push(i);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n++);
    }
  }
  return new Map(cs.map((c, i) => [String.fromCharCode(c), bs[i]]));
}

export function vocabOf(tokenizer: PreTrainedTokenizer): Vocab {
  const hit = cache.get(tokenizer);
  if (hit) return hit;
  const json = ((tokenizer as unknown as { _tokenizerJSON?: TokenizerJson })._tokenizerJSON ?? {}) as TokenizerJson;
  const dec = json.decoder;
  const types = [dec?.type, ...(dec?.decoders ?? []).map((d) => d.type)];
  const byteLevel = types.includes('ByteLevel');
  const table = byteLevel ? byteLevelTable() : undefined;

  const entries: [string, number][] = Array.isArray(json.model?.vocab)
    ? (json.model!.vocab as [string, number][]).map(([piece], i) => [piece, i])
    : Object.entries((json.model?.vocab ?? {}) as Record<string, number>);
  const bytes: (Uint8Array | null)[] = [];
  const decodeOne = (id: number): Uint8Array | null => {
    const text = tokenizer.decode([id], { skip_special_tokens: false });
    return text && !text.includes('\uFFFD') ? enc.encode(text) : null;
  };
  for (const [piece, id] of entries) {
    let b: Uint8Array | null = null;
    if (table) {
      const out: number[] = [];
      for (const ch of piece) {
        const v = table.get(ch);
        if (v === undefined) {
          out.length = 0;
          break;
        }
        out.push(v);
      }
      b = out.length ? Uint8Array.from(out) : decodeOne(id);
    } else if (/^<0x[0-9A-Fa-f]{2}>$/.test(piece) && json.model?.byte_fallback) {
      b = Uint8Array.of(parseInt(piece.slice(3, 5), 16));
    } else if (types.includes('Metaspace') || types.includes('Replace') || piece.includes('\u2581')) {
      b = enc.encode(piece.replace(/\u2581/g, ' '));
    } else {
      b = decodeOne(id);
    }
    bytes[id] = b && b.length ? b : null;
  }
  for (const t of json.added_tokens ?? []) bytes[t.id] = t.special || !t.content ? null : enc.encode(t.content);
  for (const id of (tokenizer as unknown as { all_special_ids?: number[] }).all_special_ids ?? []) bytes[id] = null;

  const trie: TrieNode = { children: new Map(), tokens: [] };
  const single = new Set<number>();
  bytes.forEach((b, id) => {
    if (!b) return;
    if (b.length === 1) single.add(b[0]);
    let node = trie;
    for (const x of b) {
      let next = node.children.get(x);
      if (!next) node.children.set(x, next = { children: new Map(), tokens: [] });
      node = next;
    }
    node.tokens.push(id);
  });
  // Bytes a JSON close can need: printable ASCII and UTF-8 continuation/lead bytes of literals.
  const missingBytes: number[] = [];
  for (let x = 0x20; x < 0x7f; x++) if (!single.has(x)) missingBytes.push(x);
  const v: Vocab = { bytes, trie, byteComplete: missingBytes.length === 0, missingBytes };
  cache.set(tokenizer, v);
  return v;
}

/** Position of `needle` in `hay` at or after `from`; -1 when absent. */
export function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

export const startsWith = (b: Uint8Array, prefix: Uint8Array) => b.length >= prefix.length && prefix.every((x, i) => b[i] === x);

const containing = new WeakMap<Vocab, Map<string, number[]>>();

/** Tokens whose bytes contain `text` (cached per vocabulary). */
export function tokensContaining(vocab: Vocab, text: Uint8Array): number[] {
  let byText = containing.get(vocab);
  if (!byText) containing.set(vocab, byText = new Map());
  const key = text.join(',');
  let ids = byText.get(key);
  if (!ids) {
    ids = [];
    vocab.bytes.forEach((b, id) => {
      if (b && indexOf(b, text, 0) >= 0) ids!.push(id);
    });
    byText.set(key, ids);
  }
  return ids;
}

/** Tokens that write `text` when they follow `tail`: containing it, or finishing what `tail` began of it. */
export function tokensSpelling(vocab: Vocab, text: Uint8Array, tail: Uint8Array): number[] {
  const out = [...tokensContaining(vocab, text)];
  const collect = (node: TrieNode) => {
    out.push(...node.tokens);
    for (const child of node.children.values()) collect(child);
  };
  for (let k = Math.min(tail.length, text.length - 1); k > 0; k--) {
    if (!startsWith(text, tail.subarray(tail.length - k))) continue;
    let node: TrieNode | undefined = vocab.trie;
    for (const x of text.subarray(k)) node = node?.children.get(x);
    if (node) collect(node);
  }
  return out;
}
