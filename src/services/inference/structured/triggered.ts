/**
 * A constraint that waits for a trigger (a lazy grammar): the output is free text until it writes the
 * trigger (`<tool_call>` for the hermes form), then the constrained processor takes over until the grammar
 * is complete (the call and its closing tag), and the text is free again (more text, another call, or the
 * end). So a call the model chooses to make always parses and matches its tool's parameters, and can be
 * streamed in fragments as it is written.
 *
 * Budget: the trigger is only allowed while the shortest complete call still fits the tokens left; near the
 * end of the budget every token that would complete the trigger is masked (whole-token triggers and ones
 * spelled across tokens alike), so a started call is always finished within `maxNewTokens`. A budget too
 * small for any call (it counts bytes, as the constrained close does) gets no processor: its calls stay
 * unconstrained, parsed from the output as before.
 */
import type { LogitsLike } from '../sampling.ts';
import { concatBytes } from '../../bytes.ts';
import type { Grammar } from './automaton.ts';
import { type ConstrainedProcessor, createConstrainedProcessor, type DecodeHints } from './processor.ts';
import { indexOf, startsWith, tokensContaining, type TrieNode, type Vocab } from './vocab.ts';

export interface TriggeredProcessor {
  (inputIds: bigint[][], logits: LogitsLike): LogitsLike;
  /** Calls started so far (each one's constrained processor, for stats). */
  calls: ConstrainedProcessor[];
}

function maskSubtree(node: TrieNode, data: Float32Array) {
  for (const id of node.tokens) data[id] = -Infinity;
  for (const child of node.children.values()) maskSubtree(child, data);
}

/**
 * `grammar`: what follows the trigger (e.g. `\n{call}\n</tool_call>` after `<tool_call>`).
 */
export function createTriggeredProcessor(
  grammar: Grammar,
  trigger: Uint8Array,
  vocab: Vocab,
  eosIds: number[],
  promptTokens: number,
  maxNewTokens: number,
  hints?: DecodeHints,
): TriggeredProcessor | undefined {
  const needed = Math.min(...grammar.initial().map((s) => grammar.closeLen(s))) + 1; // the call, then EOS
  if (needed > maxNewTokens - 1) return undefined; // not even one call fits after the trigger: left unconstrained
  let inner: ConstrainedProcessor | undefined;
  let seen = promptTokens;
  // the last bytes of the free text (enough to hold all of the trigger but its last byte)
  let tail = new Uint8Array(0);
  const calls: ConstrainedProcessor[] = [];

  const fn = ((inputIds: bigint[][], logits: LogitsLike) => {
    const ids = inputIds[0];
    const generated = ids.length - promptTokens;
    const remaining = maxNewTokens - generated; // tokens still allowed, this one included
    if (inner) {
      inner.advanceTo(ids);
      if (inner.done()) (inner = undefined), (seen = ids.length), (tail = new Uint8Array(0));
      else return inner(inputIds, logits);
    }
    for (; seen < ids.length; seen++) {
      const joined = concatBytes([tail, vocab.bytes[Number(ids[seen])] ?? new Uint8Array(0)]);
      if (indexOf(joined, trigger, 0) >= 0 && needed <= remaining) {
        // the call starts after the trigger's token; it has the rest of the budget
        inner = createConstrainedProcessor(grammar, vocab, eosIds, seen + 1, maxNewTokens - (seen + 1 - promptTokens), hints);
        calls.push(inner);
        seen++;
        inner.advanceTo(ids);
        return inner(inputIds, logits);
      }
      tail = joined.slice(Math.max(0, joined.length - (trigger.length - 1)));
    }
    // Free text. A token may complete the trigger only exactly at its end (what follows it in the same token
    // would bypass the grammar), and, near the end of the budget, not at all (the call would not fit).
    const low = needed > remaining - 1;
    const data = logits.data as Float32Array;
    for (const id of tokensContaining(vocab, trigger)) {
      const b = vocab.bytes[id]!;
      if (low || indexOf(b, trigger, 0) + trigger.length !== b.length) data[id] = -Infinity;
    }
    for (let k = Math.min(tail.length, trigger.length - 1); k > 0; k--) {
      if (!startsWith(trigger, tail.subarray(tail.length - k))) continue;
      // tokens starting with the rest of the trigger: the trie node at its end holds the exact completions
      let node: TrieNode | undefined = vocab.trie;
      for (const x of trigger.subarray(k)) node = node?.children.get(x);
      if (!node) continue;
      if (low) { for (const id of node.tokens) data[id] = -Infinity; }
      for (const child of node.children.values()) maskSubtree(child, data);
    }
    return logits;
  }) as TriggeredProcessor;
  fn.calls = calls;
  return fn;
}
