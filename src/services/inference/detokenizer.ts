/**
 * Incremental detokenizer: turns one token id at a time into text deltas. It decodes a short window
 * (as Hugging Face's decode_stream does) so cost stays constant per token, and waits while the tail is an
 * incomplete UTF-8 sequence (U+FFFD) from a byte-level token.
 */
export interface Decoder {
  decode(ids: number[], opts: { skip_special_tokens: boolean }): string;
}

export function createDetokenizer(tok: Decoder) {
  const ids: number[] = [];
  let prefix = 0;
  let read = 0;
  const dec = (a: number, b = ids.length) => (b > a ? tok.decode(ids.slice(a, b), { skip_special_tokens: true }) : '');
  return {
    push(id: number): string {
      ids.push(id);
      const before = dec(prefix, read);
      const now = dec(prefix);
      if (now.length > before.length && !now.endsWith('\uFFFD')) {
        prefix = read;
        read = ids.length;
        return now.slice(before.length);
      }
      return '';
    },
    /** Whatever is still held back (an unfinished byte sequence decodes as U+FFFD). */
    flush(): string {
      const before = dec(prefix, read);
      const now = dec(prefix);
      prefix = read = ids.length;
      return now.length > before.length ? now.slice(before.length) : '';
    },
  };
}
