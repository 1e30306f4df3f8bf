/**
 * Rotary position embeddings as one operator. Exports of decoders that rotate with `rotate_half` (Llama,
 * Qwen2, Mistral...) write each rotation as about fourteen small nodes, for the queries and again for the
 * keys of every layer: x·cos + concat(−x[…, h:], x[…, :h])·sin, with h computed from x's shape at every
 * call. Each node costs ONNX Runtime a few microseconds whatever its size, so on a 24-layer model these
 * were about 1,300 of a decode step's 1,650 nodes and a twentieth of its time.
 *
 * ONNX Runtime's RotaryEmbedding (com.microsoft, in its CPU and WASM builds) does the same rotation in
 * one node, reading cos and sin of the first half from a cache [rows, h] at each position's row. The
 * rewrite makes the graph's own cos and sin that cache (already computed for the call's positions and
 * shared by every layer): row b·S + s holds position s of row b, and the position ids given to the
 * operator are those row numbers, built once per call. A cos and sin shared by the batch ([1, 1, S, D])
 * give S rows, broadcast to every row of the batch. The products and sums are the same ones: the logits
 * agree to float rounding (tested against the exported graph and torch).
 *
 * Matched only where x is in [batch, heads, sequence, head size] layout (the Transpose of the heads right
 * before it) and the split is provably at the middle of x's last axis. One of the edits of ./decoder-graph.ts.
 */
import { type GraphNode, int64Tensor, intAttr, intsAttr, node, type WireWriter } from '../models/onnx-wire.ts';
import { type DecoderShape, type GraphEdit, onlyUse } from './decoder-graph.ts';

const P = 'svc_rope';
const MS = 'com.microsoft';

/** Replaces every rotate_half rotation with RotaryEmbedding; returns how many. */
export function fuseRotaryEmbedding(g: GraphEdit, shape: DecoderShape): number {
  /** Caches and position ids already built, per (cos, sin) pair. */
  const caches = new Map<string, { cos: string; sin: string; pos: string }>();
  let fused = 0;
  const op = (n: GraphNode | undefined, type: string) => n && n.opType === type && !n.domain ? n : undefined;
  for (const add of g.nodes) {
    if (!op(add, 'Add') || add.inputs.length !== 2 || g.removed.has(add)) continue;
    const [m0, m1] = add.inputs.map((i) => op(g.producer.get(i!), 'Mul'));
    if (!m0 || !m1) continue;
    const concat0 = op(g.producer.get(m0.inputs[0]!), 'Concat') ?? op(g.producer.get(m0.inputs[1]!), 'Concat');
    const [sinMul, cosMul] = concat0 ? [m0, m1] : [m1, m0];
    const cat = op(g.producer.get(sinMul.inputs[0]!), 'Concat') ?? op(g.producer.get(sinMul.inputs[1]!), 'Concat');
    if (!cat || cat.inputs.length !== 2 || ![-1, 3].includes(intAttr(cat, 'axis') ?? NaN)) continue;
    const sin = sinMul.inputs[0] === cat.outputs[0] ? sinMul.inputs[1]! : sinMul.inputs[0]!;
    const neg = op(g.producer.get(cat.inputs[0]!), 'Neg');
    const upper = op(g.producer.get(neg?.inputs[0] ?? ''), 'Slice');
    const lower = op(g.producer.get(cat.inputs[1]!), 'Slice');
    if (!neg || !upper || !lower || upper.inputs[0] !== lower.inputs[0]) continue;
    const x = upper.inputs[0]!;
    if (!cosMul.inputs.includes(x) || cosMul.inputs[0] === cosMul.inputs[1]) continue;
    const cos = cosMul.inputs[0] === x ? cosMul.inputs[1]! : cosMul.inputs[0]!;
    // [batch, heads, sequence, head size]: the heads were just moved in front of the sequence
    const t = op(g.producer.get(x), 'Transpose');
    if (!t || `${intsAttr(t, 'perm')}` !== '0,2,1,3') continue;
    // every node of the rotation feeds only the next one
    const chain: [GraphNode, GraphNode][] = [[upper, neg], [neg, cat], [lower, cat], [cat, sinMul], [sinMul, add], [cosMul, add]];
    if (chain.some(([from, to]) => onlyUse(g, from.outputs[0]!) !== to)) continue;
    if (!splitsHeadInHalf(g, upper, lower, x, shape.headDim)) continue;

    const out: WireWriter[] = [];
    const key = `${cos}\n${sin}`;
    let cache = caches.get(key);
    if (!cache) {
      const p = `${P}_${caches.size}`;
      cache = { cos: `${p}_cos`, sin: `${p}_sin`, pos: `${p}_pos` };
      // the first half of each position's cos and sin, one row per (batch row, position)
      for (const [from, to] of [[cos, cache.cos], [sin, cache.sin]] as const) {
        out.push(
          node('Slice', [from, `${P}_0`, `${P}_half`, `${P}_last`], [`${to}_half`], `${to}_half`),
          node('Reshape', [`${to}_half`, `${P}_rows`], [to], to),
        );
      }
      // position ids: the row numbers, [batch or 1, S], broadcast to x's [batch, S]
      out.push(
        node('Shape', [cache.cos], [`${p}_cache_shape`], `${p}_cache_shape`),
        node('Gather', [`${p}_cache_shape`, `${P}_scalar0`], [`${p}_rows`], `${p}_rows`, '', { axis: 0 }),
        node('Range', [`${P}_scalar0`, `${p}_rows`, `${P}_scalar1`], [`${p}_range`], `${p}_range`),
        // x's batch and sequence: the token ids' [batch, sequence] where the graph takes them (made before the first
        // layer then), else x's own [batch, heads, sequence, head size]
        node('Shape', [g.tokens ?? x], [`${p}_x_shape`], `${p}_x_shape`),
        node('Slice', [`${p}_x_shape`, g.tokens ? `${P}_1` : `${P}_2`, g.tokens ? `${P}_2` : `${P}_3`], [`${p}_seq`], `${p}_seq`),
        node('Slice', [`${p}_x_shape`, `${P}_0`, `${P}_1`], [`${p}_batch`], `${p}_batch`),
        node('Concat', [`${P}_last`, `${p}_seq`], [`${p}_by_seq`], `${p}_by_seq`, '', { axis: 0 }),
        node('Concat', [`${p}_batch`, `${p}_seq`], [`${p}_x_rows`], `${p}_x_rows`, '', { axis: 0 }),
        node('Reshape', [`${p}_range`, `${p}_by_seq`], [`${p}_pos_rows`], `${p}_pos_rows`),
        node('Expand', [`${p}_pos_rows`, `${p}_x_rows`], [cache.pos], cache.pos),
      );
      caches.set(key, cache);
      g.read.add(cos).add(sin);
      if (g.tokens) g.read.add(g.tokens);
    }
    out.push(node('RotaryEmbedding', [x, cache.pos, cache.cos, cache.sin], [add.outputs[0]!], `${P}_${fused}`, MS));
    for (const n of [add, cosMul, sinMul, cat, neg, upper, lower]) g.removed.add(n);
    g.read.add(x);
    g.replace.set(add.index, out);
    fused++;
  }
  if (fused) {
    const half = shape.headDim! / 2;
    g.initializers.push(
      int64Tensor(`${P}_0`, [0]),
      int64Tensor(`${P}_1`, [1]),
      int64Tensor(`${P}_2`, [2]),
      int64Tensor(`${P}_3`, [3]),
      int64Tensor(`${P}_half`, [half]),
      int64Tensor(`${P}_last`, [-1]),
      int64Tensor(`${P}_rows`, [-1, half]),
      int64Tensor(`${P}_scalar0`, [0], []),
      int64Tensor(`${P}_scalar1`, [1], []),
    );
    g.domains.add(MS);
  }
  return fused;
}

/**
 * Whether `upper` = x[…, h:] and `lower` = x[…, :h] split x's last axis (the model's head size D) at its
 * middle. Bounds computed from x's shape are evaluated with that dimension taken as D.
 */
function splitsHeadInHalf(g: GraphEdit, upper: GraphNode, lower: GraphNode, x: string, d: number | undefined): boolean {
  const one = (s: GraphNode, i: number) => {
    const v = d && s.inputs[i] ? evalInts(g, s.inputs[i], x, d) : undefined;
    return v?.length === 1 ? v[0] : undefined;
  };
  const onLastAxis = (s: GraphNode) => {
    const axes = s.inputs[3] ? g.constant.get(s.inputs[3])?.ints : undefined;
    const steps = s.inputs[4] ? g.constant.get(s.inputs[4])?.ints : [1];
    return axes?.length === 1 && (axes[0] === -1 || axes[0] === 3) && steps?.length === 1 && steps[0] === 1;
  };
  if (!d || d % 2 || !onLastAxis(upper) || !onLastAxis(lower)) return false;
  const [from, to, start, end] = [one(upper, 1), one(upper, 2), one(lower, 1), one(lower, 2)];
  return from === d / 2 && to !== undefined && to >= d && start === 0 && end === from;
}

/**
 * The values of an int64 shape expression (constants, x's last dimension taken as `d`, and the integer
 * arithmetic exporters write around them), or undefined when it is anything else.
 */
function evalInts(g: GraphEdit, name: string, x: string, d: number, depth = 0): number[] | undefined {
  const c = g.constant.get(name);
  if (c?.ints) return c.ints;
  const n = g.producer.get(name);
  if (!n || n.domain || depth > 16) return undefined;
  const arg = (i: number) => (n.inputs[i] ? evalInts(g, n.inputs[i], x, d, depth + 1) : undefined);
  const both = (f: (a: number, b: number) => number) => {
    const [a, b] = [arg(0), arg(1)];
    if (!a || !b || (a.length !== b.length && a.length !== 1 && b.length !== 1)) return undefined;
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) => f(a[a.length === 1 ? 0 : i]!, b[b.length === 1 ? 0 : i]!));
  };
  switch (n.opType) {
    case 'Gather': {
      // a dimension of x: its last one
      const s = g.producer.get(n.inputs[0]!);
      const i = g.constant.get(n.inputs[1]!)?.ints;
      const whole = s && intAttr(s, 'start') === undefined && intAttr(s, 'end') === undefined;
      return s?.opType === 'Shape' && !s.domain && s.inputs[0] === x && whole && i?.length === 1 && (i[0] === 3 || i[0] === -1)
        ? [d]
        : undefined;
    }
    case 'Cast':
    case 'Identity':
    case 'Unsqueeze':
    case 'Squeeze':
      return arg(0);
    case 'Add':
      return both((a, b) => a + b);
    case 'Sub':
      return both((a, b) => a - b);
    case 'Mul':
      return both((a, b) => a * b);
    case 'Div':
      return both((a, b) => Math.trunc(a / b));
    default:
      return undefined;
  }
}
