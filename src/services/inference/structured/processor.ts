/**
 * The constrained-decoding logits processor (batch size 1): every step masks the logits to the tokens that
 * keep the text inside the grammar, and — the budget-aware close — only to those after which the shortest
 * valid completion still fits the tokens left (one kept for EOS). EOS is allowed only once the document is
 * complete, and is the only choice when nothing may follow. So the output always parses and validates
 * within `maxNewTokens`, whatever the model's logits are.
 *
 * The allowed set for a state is computed by walking the vocabulary trie through the automaton (inside a
 * plain string, from the vocabulary's string table), then cached by the state's key (inside a free string
 * every step has the same key, so the walk runs once), across generations under the same grammar.
 *
 * Why our own and not `@huggingface/transformers-structured-output`: that processor keeps every token inside
 * the JSON grammar but does not make the output complete — with a weak model a string never closes and
 * `max_tokens` cuts the JSON mid-way. "Always parses" needs the budget-aware close above, which needs the
 * shortest-completion length of every state (automaton.ts `closeLen`), which that library does not expose.
 */
import { type LogitsLike, type LogitsProcessorFn, seededRandom } from '../sampling.ts';
import {
  atPlainString,
  Grammar,
  type PlainString,
  plainStringRest,
  plainStringTop,
  type Stack,
  stackKey,
  stepPlainString,
} from './automaton.ts';
import { ServiceError } from '../../errors.ts';
import { concatBytes } from '../../bytes.ts';
import { indexOf, tokensSpelling, type TrieNode, type Vocab } from './vocab.ts';
import { stringTable } from './string-table.ts';

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
  /** Steps where the model's own choice was allowed (no mask built). */
  fast: number;
}

export interface ConstrainedProcessor extends LogitsProcessorFn {
  stats: ConstraintStats;
  /** The text is a complete document. */
  done(): boolean;
  /** Takes in the tokens generated since the last call (`ids`: prompt and output, as the processor gets them). */
  advanceTo(ids: bigint[]): void;
}

/**
 * Allowed sets are shared by every generation under the same grammar and vocabulary (prepareConstraint
 * reuses the grammar of a schema seen before, as clients repeat their schemas), in one LRU bounded by the
 * token ids it holds (about 32 MB with their closes).
 */
const MAX_CACHED_IDS = 4_000_000;
const masks = new Map<string, Allowed>();
let cachedIds = 0;
const objectIds = new WeakMap<object, number>();
let nextId = 0;
const idOf = (o: object) => {
  let id = objectIds.get(o);
  if (id === undefined) objectIds.set(o, id = nextId++);
  return id;
};

function cachedMask(key: string): Allowed | undefined {
  const hit = masks.get(key);
  if (hit) (masks.delete(key), masks.set(key, hit)); // most recently used last
  return hit;
}

function cacheMask(key: string, a: Allowed) {
  masks.set(key, a);
  cachedIds += a.ids.length;
  for (const [k, old] of masks) {
    if (cachedIds <= MAX_CACHED_IDS || k === key) break;
    masks.delete(k);
    cachedIds -= old.ids.length;
  }
}

export function budgetTooSmall(needed: number, budget: number) {
  return new ServiceError(
    400,
    'invalid_request',
    `a budget of ${budget} tokens (max_tokens, or what the prompt leaves of the model's context) is too small for the requested format: the shortest valid output needs up to ${needed} tokens`,
  );
}

/**
 * How the token is chosen after this processor (the rest of the pipeline), so it may pick the token itself
 * when the model's own choice is allowed, without computing the whole mask (the expensive part: a walk of the
 * vocabulary trie). Absent: the full mask every step (always correct, whatever chooses next).
 */
export interface DecodeHints {
  /** 0 or below: greedy. */
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  /** The whole constrained distribution is read after this processor (logprobs): always mask fully. */
  fullDistribution?: boolean;
}

/** Best-scored tokens checked in order (greedy, top_k) before the full mask is built. */
const SCAN = 64;
/** Draws from the unconstrained distribution before the full mask is built (rejection sampling). */
const SAMPLE_TRIES = 4;
/** Misses in a row after which the choice check is only probed every PROBE_EVERY steps. */
const MISS_RUN = 8;
const PROBE_EVERY = 8;

export function createConstrainedProcessor(
  grammar: Grammar,
  vocab: Vocab,
  eosIds: number[],
  promptTokens: number,
  maxNewTokens: number,
  hints?: DecodeHints,
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
  const scope = `${idOf(grammar)}.${idOf(vocab)}#`;
  const stats: ConstraintStats = { steps: 0, cacheHits: 0, walkNs: 0, totalNs: 0, fast: 0 };
  const eosSet = new Set(eosIds);
  const fast = fastPath(hints);
  let misses = 0;
  // the states after the tokens the fast path kept (reused for the one appended)
  const next = new Map<number, Stack[]>();

  /** The state after `token`'s bytes; empty when it leaves the grammar. */
  const after = (from: Stack[], token: number): Stack[] => {
    const b = vocab.bytes[token];
    if (!b) return [];
    let st = from;
    for (const x of b) {
      st = dedupe(st.flatMap((s) => grammar.step(s, x)));
      if (st.length === 0) return st;
    }
    return st;
  };
  // The grammar's closing text (a hermes call's `</tool_call>`: its post without the line break) is where
  // a parser of the output ends the block, so it is written only as that close: a JSON string could
  // otherwise spell it earlier and cut the call there. `tail` holds the output's last bytes, for a token
  // that finishes the text those bytes began.
  const closeTag = grammar.post.subarray(Math.max(0, grammar.post.findIndex((b) => b !== 0x0a && b !== 0x20)));
  let tail = new Uint8Array(0);
  /** `token`, leading to `st`, writes the closing text while the grammar is not complete after it. */
  const closesEarly = (token: number, st: Stack[]): boolean => {
    if (!closeTag.length || st.some((s) => grammar.atEnd(s))) return false;
    return indexOf(concatBytes([tail, vocab.bytes[token]!]), closeTag, 0) >= 0;
  };
  const advance = (token: number) => {
    const st = next.get(token) ?? after(state, token);
    if (st.length === 0) throw new Error(`constrained decoding: token ${token} left the grammar`);
    state = st;
    next.clear();
    if (!closeTag.length) return;
    const joined = concatBytes([tail, vocab.bytes[token]!]);
    tail = joined.slice(Math.max(0, joined.length - (closeTag.length - 1)));
  };
  const advanceTo = (ids: bigint[]) => {
    for (; promptTokens + consumed < ids.length; consumed++) advance(Number(ids[promptTokens + consumed]));
    next.clear();
  };
  /** `token` keeps the output valid, and its shortest completion plus EOS fits the budget. */
  const allows = (token: number, limit: number): boolean => {
    if (eosSet.has(token)) return state.some((s) => grammar.atEnd(s));
    const st = after(state, token);
    if (st.length === 0 || minClose(grammar, st) > limit || closesEarly(token, st)) return false;
    next.set(token, st);
    return true;
  };

  const fn = ((inputIds: bigint[][], logits: LogitsLike) => {
    const t0 = performance.now();
    advanceTo(inputIds[0]);
    const remaining = maxNewTokens - consumed; // tokens still allowed, this one included
    const limit = remaining - 2; // after this token: close + EOS must fit in remaining - 1
    const data = logits.data as Float32Array;
    // after a run of misses (a model whose choices the grammar rarely allows) the check is only probed now and then
    const tryFast = fast && (misses < MISS_RUN || stats.steps % PROBE_EVERY === 0);
    const kept = tryFast ? fast(data, (id) => allows(id, limit)) : undefined;
    if (tryFast) misses = kept ? 0 : misses + 1;
    if (kept) {
      // what the sampler after this can pick from the full mask, found without it (see fastPath)
      const vals = kept.map((id) => data[id]);
      data.fill(-Infinity);
      kept.forEach((id, i) => (data[id] = vals[i]));
      stats.fast++;
    } else {
      next.clear();
      mask(data, allowedFor(state), limit);
      // the cached mask is the state's; the closing text also depends on the bytes before it
      if (closeTag.length) {
        for (const id of tokensSpelling(vocab, closeTag, tail)) {
          if (data[id] > -Infinity && closesEarly(id, after(state, id))) data[id] = -Infinity;
        }
      }
    }
    stats.steps++;
    stats.totalNs += Math.round((performance.now() - t0) * 1e6);
    return logits;
  }) as ConstrainedProcessor;

  const allowedFor = (st: Stack[]): Allowed => {
    const key = scope + st.map(stackKey).sort().join('#');
    let allowed = cachedMask(key);
    if (allowed) stats.cacheHits++;
    else {
      const tw = performance.now();
      allowed = computeAllowed(grammar, vocab, st);
      stats.walkNs += Math.round((performance.now() - tw) * 1e6);
      cacheMask(key, allowed);
    }
    return allowed;
  };

  const mask = (data: Float32Array, allowed: Allowed, limit: number) => {
    const keep: number[] = [];
    const vals: number[] = [];
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
  };

  fn.stats = stats;
  fn.done = () => state.some((s) => grammar.atEnd(s));
  fn.advanceTo = advanceTo;
  return fn;
}

/**
 * The tokens the sampler after this processor may pick, found by checking the model's own best choices
 * against the grammar before any mask is built; undefined: build the full mask. Each case leaves the sampler
 * exactly what it would pick from under the full mask:
 *
 * - greedy: the best-scored tokens in order (ties to the lower id, as argmax breaks them); the first allowed
 *   one is the argmax of the masked logits.
 * - top_k (≤ SCAN, with or without top_p): the first k allowed tokens in score order are the top k of the
 *   masked logits; the sampler's temperature, top_k and top_p over them are what it does over the full mask.
 * - temperature alone: rejection sampling. A draw from the unconstrained distribution p that is allowed is
 *   kept; after SAMPLE_TRIES misses the full mask goes to the sampler. A token a of the allowed set A comes
 *   out with probability sum_{i<n} (1-p(A))^i p(a) + (1-p(A))^n p(a)/p(A) = p(a)/p(A): the constrained
 *   distribution.
 *
 * top_p without top_k needs p(A), the whole allowed set, as do logprobs (the distribution normalised over
 * it): those always take the full mask.
 */
function fastPath(h: DecodeHints | undefined): ((data: Float32Array, allows: (id: number) => boolean) => number[] | undefined) | undefined {
  if (!h || h.fullDistribution) return undefined;
  const temperature = h.temperature ?? 1;
  const topK = Math.max(0, Math.floor(h.topK ?? 0));
  const topP = h.topP ?? 1;
  const want = !(temperature > 0) ? 1 : topK;
  if (want > 0 && want <= SCAN) {
    const best = new Int32Array(SCAN);
    return (data, allows) => {
      const n = topIndices(data, best);
      const out: number[] = [];
      for (let i = 0; i < n && out.length < want && out.length + n - i >= want; i++) if (allows(best[i])) out.push(best[i]);
      return out.length === want ? out : undefined;
    };
  }
  if (topK > 0 || topP < 1) return undefined;
  // its own stream: the sampler after it keeps the request's seeded one
  const rand = seededRandom(((h.seed ?? (Math.random() * 2 ** 32)) ^ 0x5bd1e995) >>> 0);
  let w = new Float32Array(0);
  return (data, allows) => {
    const n = data.length;
    let max = -Infinity;
    for (let i = 0; i < n; i++) if (data[i] > max) max = data[i];
    if (!Number.isFinite(max)) return undefined;
    if (w.length !== n) w = new Float32Array(n);
    let z = 0;
    for (let i = 0; i < n; i++) z += w[i] = Math.exp((data[i] - max) / temperature);
    if (!(z > 0) || !Number.isFinite(z)) return undefined;
    for (let t = 0; t < SAMPLE_TRIES; t++) {
      let r = rand() * z;
      let pick = n - 1;
      for (let i = 0; i < n; i++) {
        r -= w[i];
        if (r <= 0) {
          pick = i;
          break;
        }
      }
      if (w[pick] > 0 && allows(pick)) return [pick];
    }
    return undefined;
  };
}

/** The indices of the largest finite logits, best first (ties: lower index first); how many were found. */
function topIndices(data: Float32Array, out: Int32Array): number {
  const k = out.length;
  let n = 0;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (!(v > -Infinity)) continue; // -Infinity and NaN
    if (n === k && v <= data[out[k - 1]]) continue;
    let j = n === k ? k - 1 : n++;
    while (j > 0 && data[out[j - 1]] < v) {
      out[j] = out[j - 1];
      j--;
    }
    out[j] = i;
  }
  return n;
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
    if (st.length === 1) {
      const p = plainStringTop(st[0]);
      if (p) return walkString(node, st[0], p);
    }
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
  // Inside a plain string (most of the vocabulary may follow) the walk steps the string's position alone,
  // without building stacks; the closing quote goes back to the automaton.
  const walkString = (node: TrieNode, at: Stack, start: PlainString) => {
    const up = g.closeLen(at) - plainStringRest(start.min, start.len, start.esc, start.u8); // after the string
    const p = { ...start };
    const inside = (node: TrieNode) => {
      const { len, esc, u8, lo, hi } = p;
      for (const [b, child] of node.children) {
        if (b === 0x22 && !esc && u8 === 0) {
          const next = g.step(atPlainString(at, p), b);
          if (next.length === 0) continue;
          if (child.tokens.length) {
            const c = minClose(g, next);
            for (const t of child.tokens) (ids.push(t), close.push(c));
          }
          if (child.children.size) walk(child, next);
          continue;
        }
        const r = stepPlainString(p, b);
        if (!r) continue;
        [p.len, p.esc, p.u8, p.lo, p.hi] = r;
        if (child.tokens.length) {
          const c = up + plainStringRest(p.min, p.len, p.esc, p.u8);
          for (const t of child.tokens) (ids.push(t), close.push(c));
        }
        if (child.children.size) inside(child);
        p.len = len;
        p.esc = esc;
        p.u8 = u8;
        p.lo = lo;
        p.hi = hi;
      }
    };
    inside(node);
  };
  const top = state.length === 1 ? plainStringTop(state[0]) : undefined;
  if (top) fromStringTable(g, vocab, state[0], top, ids, close);
  else walk(vocab.trie, state);
  return { ids: Int32Array.from(ids), close: Int32Array.from(close), end: state.some((s) => g.atEnd(s)) };
}

/** The allowed set of a plain-string state from the vocabulary's string table (string-table.ts). */
function fromStringTable(g: Grammar, vocab: Vocab, at: Stack, p: PlainString, ids: number[], close: number[]) {
  const t = stringTable(vocab, p.esc, p.u8, p.lo, p.hi);
  const up = g.closeLen(at) - plainStringRest(p.min, p.len, p.esc, p.u8); // after the string
  const room = p.max - p.len;
  for (let i = 0; i < t.inside.length; i++) {
    if (t.chars[i] > room) continue;
    ids.push(t.inside[i]);
    close.push(up + t.owed[i] + Math.max(0, p.min - p.len - t.chars[i]) + 1);
  }
  for (let i = 0; i < t.closing.length; i++) {
    if (t.closingChars[i] > room) continue;
    const id = t.closing[i];
    const b = vocab.bytes[id]!;
    let st = g.step(atPlainString(at, { len: p.len + t.closingChars[i], esc: false, u8: 0, lo: p.lo, hi: p.hi }), 0x22);
    for (let j = t.quoteAt[i] + 1; j < b.length && st.length; j++) st = dedupe(st.flatMap((s) => g.step(s, b[j])));
    if (st.length === 0) continue;
    ids.push(id);
    close.push(minClose(g, st));
  }
}
