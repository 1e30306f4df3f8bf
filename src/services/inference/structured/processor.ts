/**
 * The constrained-decoding logits processor (batch size 1): every step masks the logits to the tokens that
 * keep the text inside the grammar, and — the budget-aware close — only to those after which the shortest
 * valid completion still fits the tokens left (one kept for EOS). EOS is allowed only once the document is
 * complete, and is the only choice when nothing may follow. So the output always parses and validates
 * within `maxNewTokens`, whatever the model's logits are.
 *
 * The allowed set for a state is computed by walking the vocabulary trie through the automaton, then
 * cached by the state's key (inside a free string every step has the same key, so the walk runs once).
 *
 * Why our own and not `@huggingface/transformers-structured-output`: that processor keeps every token inside
 * the JSON grammar but does not make the output complete — with a weak model a string never closes and
 * `max_tokens` cuts the JSON mid-way. "Always parses" needs the budget-aware close above, which needs the
 * shortest-completion length of every state (automaton.ts `closeLen`), which that library does not expose.
 */
import type { LogitsLike, LogitsProcessorFn } from '../sampling.ts';
import { Grammar, type Stack, stackKey } from './automaton.ts';
import { ServiceError } from '../../errors.ts';
import type { TrieNode, Vocab } from './vocab.ts';

interface Allowed {
  ids: Int32Array;
  /** Shortest completion (bytes ≈ upper bound of tokens) after each allowed token. */
  close: Int32Array;
  end: boolean;
}

export interface ConstraintStats {
  steps: number;
  cacheHits: number;
  walkNs: number;
  totalNs: number;
}

export interface ConstrainedProcessor extends LogitsProcessorFn {
  stats: ConstraintStats;
  /** The text is a complete document. */
  done(): boolean;
}

const MAX_CACHE = 4096;

export function budgetTooSmall(needed: number, budget: number) {
  return new ServiceError(
    400,
    'invalid_request',
    `a budget of ${budget} tokens (max_tokens, or what the prompt leaves of the model's context) is too small for the requested format: the shortest valid output needs up to ${needed} tokens`,
  );
}

export function createConstrainedProcessor(
  grammar: Grammar,
  vocab: Vocab,
  eosIds: number[],
  promptTokens: number,
  maxNewTokens: number,
): ConstrainedProcessor {
  if (!vocab.byteComplete) {
    throw new ServiceError(
      400,
      'unsupported_schema',
      `this model's vocabulary has no single-byte tokens for ${vocab.missingBytes.length} printable characters, so constrained output cannot be guaranteed`,
    );
  }
  if (eosIds.length === 0) {
    throw new ServiceError(
      400,
      'unsupported_schema',
      'this model declares no end-of-sequence token, so constrained output cannot be ended',
    );
  }
  let state: Stack[] = grammar.initial();
  const first = minClose(grammar, state);
  if (first + 1 > maxNewTokens) throw budgetTooSmall(first + 1, maxNewTokens);
  let consumed = 0;
  const cache = new Map<string, Allowed>();
  const stats: ConstraintStats = { steps: 0, cacheHits: 0, walkNs: 0, totalNs: 0 };

  const advance = (token: number) => {
    const b = vocab.bytes[token];
    if (!b) throw new Error(`constrained decoding: token ${token} is not part of the grammar`);
    for (const x of b) state = dedupe(state.flatMap((s) => grammar.step(s, x)));
    if (state.length === 0) throw new Error(`constrained decoding: token ${token} left the grammar`);
  };

  const fn = ((inputIds: bigint[][], logits: LogitsLike) => {
    const t0 = performance.now();
    const ids = inputIds[0];
    for (; promptTokens + consumed < ids.length; consumed++) advance(Number(ids[promptTokens + consumed]));
    const remaining = maxNewTokens - consumed; // tokens still allowed, this one included
    const key = state.map(stackKey).sort().join('#');
    let allowed = cache.get(key);
    if (allowed) stats.cacheHits++;
    else {
      const tw = performance.now();
      allowed = computeAllowed(grammar, vocab, state);
      stats.walkNs += Math.round((performance.now() - tw) * 1e6);
      if (cache.size >= MAX_CACHE) cache.delete(cache.keys().next().value!);
      cache.set(key, allowed);
    }
    const data = logits.data as Float32Array;
    const keep: number[] = [];
    const vals: number[] = [];
    const limit = remaining - 2; // after this token: close + EOS must fit in remaining - 1
    for (let i = 0; i < allowed.ids.length; i++) {
      const id = allowed.ids[i];
      if (allowed.close[i] <= limit && id < data.length) {
        keep.push(id);
        vals.push(data[id]);
      }
    }
    if (allowed.end) { for (const e of eosIds) if (e < data.length) (keep.push(e), vals.push(data[e])); }
    if (keep.length === 0) throw new Error('constrained decoding: no token keeps the output valid within the budget (grammar bug)');
    // A model may score every allowed token -Infinity (or NaN); keep them choosable.
    let finite = false;
    for (let i = 0; i < vals.length; i++) {
      if (Number.isNaN(vals[i])) vals[i] = -1e30;
      if (vals[i] > -Infinity) finite = true;
    }
    data.fill(-Infinity);
    for (let i = 0; i < keep.length; i++) data[keep[i]] = finite ? vals[i] : 0;
    stats.steps++;
    stats.totalNs += Math.round((performance.now() - t0) * 1e6);
    return logits;
  }) as ConstrainedProcessor;
  fn.stats = stats;
  fn.done = () => state.some((s) => grammar.atEnd(s));
  return fn;
}

function minClose(g: Grammar, state: Stack[]): number {
  let m = Infinity;
  for (const s of state) m = Math.min(m, g.closeLen(s));
  return m;
}

function dedupe(state: Stack[]): Stack[] {
  if (state.length < 2) return state;
  const seen = new Map<string, Stack>();
  for (const s of state) seen.set(stackKey(s), s);
  return [...seen.values()];
}

function computeAllowed(g: Grammar, vocab: Vocab, state: Stack[]): Allowed {
  const ids: number[] = [];
  const close: number[] = [];
  const walk = (node: TrieNode, st: Stack[]) => {
    for (const [b, child] of node.children) {
      let next: Stack[] = [];
      for (const s of st) {
        const r = g.step(s, b);
        if (r.length) next = next.length ? next.concat(r) : r;
      }
      if (next.length === 0) continue;
      if (next.length > 8) next = dedupe(next);
      if (child.tokens.length) {
        const c = minClose(g, next);
        for (const t of child.tokens) {
          ids.push(t);
          close.push(c);
        }
      }
      if (child.children.size) walk(child, next);
    }
  };
  walk(vocab.trie, state);
  return { ids: Int32Array.from(ids), close: Int32Array.from(close), end: state.some((s) => g.atEnd(s)) };
}
