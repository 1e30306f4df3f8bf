/**
 * A graph stage that is one layer's attention and nothing else, as the wide cut of ./weight-split.ts leaves it
 * once the rewrites of ./decoder-graph.ts have run: the queries and new keys rotated by RotaryEmbedding
 * (./rotary-embedding.ts), grouped onto the unrepeated key/value heads (./grouped-attention.ts), scored against
 * the cached and the new keys apart (./past-and-new.ts), divided by a constant, masked, softmax, the values
 * summed, the heads joined again. svc's kernel (src/runtime/kernels.ts `attention`) computes the same in one
 * call, where ONNX Runtime runs ~45 nodes, most of them a few microseconds of overhead each at a decode step.
 *
 * Recognized by walking back from the stage's outputs: every operator, attribute and constant that decides
 * what is computed is checked (transpose orders, softmax and split axes, the head counts of each reshape, the
 * rotation's layout). What only computes a reshape's batch and sequence sizes is not, as the caller checks the
 * tensors' shapes at each run.
 */
import { type GraphNode, indexGraph, intAttr, intsAttr, modelGraph, onnxOpset } from '../models/onnx-wire.ts';
import { type Constants, floatAttr, intsOf, scalarOf } from './weight-split.ts';

export interface AttentionStage {
  /** Stage inputs: q [b, s, heads·d]; k, v [b, s, kvHeads·d]. */
  q: string;
  k: string;
  v: string;
  /** RotaryEmbedding's position ids [b, s] (rows of cos and sin) and caches [rows, d/2]. */
  pos: string;
  cos: string;
  sin: string;
  /** The cached keys and values [b, kvHeads, past, d]. */
  pastKey: string;
  pastValue: string;
  /** Added to the scores: [b, 1, s, past + s]. */
  mask: string;
  heads: number;
  kvHeads: number;
  headSize: number;
  /** The scores are divided by it. */
  divisor: number;
  /** The stage's outputs: the attention [b, s, heads·d], and the names of the rotated new keys and of the new values ([b, kvHeads, s, d]). */
  output: string;
  keys: string[];
  values: string[];
}

const MS = 'com.microsoft';

/** The attention a graph stage is, or undefined where it is anything else or more. */
export function attentionOf(model: Uint8Array, inputs: string[], outputs: string[]): AttentionStage | undefined {
  const parsed = modelGraph(model);
  if (!parsed) return undefined;
  const { inits, nodes } = indexGraph(parsed.graph);
  const made = new Map(nodes.flatMap((n) => n.outputs.map((o) => [o, n] as const)));
  const c: Constants = { made, inits, weight: () => undefined };
  const given = new Set(inputs);
  const op = (name: string | undefined, type: string, domain = ''): GraphNode | undefined => {
    const n = name === undefined ? undefined : made.get(name);
    return n?.opType === type && n.domain === domain ? n : undefined;
  };
  const perm = (n: GraphNode | undefined, want: number[]) => n && String(intsAttr(n, 'perm')) === String(want);
  const lastAxis = (n: GraphNode, byDefault: boolean) => {
    const axis = intAttr(n, 'axis');
    return axis === undefined ? byDefault : axis === -1 || axis === 3;
  };
  // Reshape(x, [0, heads, -1, 0]): heads, where it is one
  const regrouped = (n: GraphNode | undefined) => {
    const to = n && intsOf(n.inputs[1]!, c);
    return to?.length === 4 && to[0] === 0 && to[2] === -1 && to[3] === 0 && to[1]! > 0 && !intAttr(n!, 'allowzero') ? to[1] : undefined;
  };
  // Transpose(Reshape(x, Concat(…, …, heads, d)), [0, 2, 1, 3]) of a stage input x: x, heads and d
  const split = (name: string | undefined) => {
    const t = op(name, 'Transpose');
    const r = op(t?.inputs[0], 'Reshape');
    const shape = op(r?.inputs[1], 'Concat');
    if (!perm(t, [0, 2, 1, 3]) || !r || !given.has(r.inputs[0]!) || shape?.inputs.length !== 4 || intAttr(r, 'allowzero')) return undefined;
    const [h, d] = [intsOf(shape.inputs[2]!, c), intsOf(shape.inputs[3]!, c)];
    return h?.length === 1 && d?.length === 1 && h[0]! > 0 && d[0]! > 0 ? { x: r.inputs[0]!, heads: h[0]!, d: d[0]!, t: t! } : undefined;
  };
  // RotaryEmbedding of the rotate-half layout, the whole head rotated, its position ids and caches stage inputs
  const rotary = (n: GraphNode | undefined) =>
    n && n.inputs.length === 4 && n.inputs.slice(1).every((x) => given.has(x)) && !intAttr(n, 'interleaved') &&
      !intAttr(n, 'rotary_embedding_dim') && !intAttr(n, 'is_packed_batching') && (floatAttr(n, 'scale') ?? 1) === 1
      ? { x: n.inputs[0]!, pos: n.inputs[1]!, cos: n.inputs[2]!, sin: n.inputs[3]! }
      : undefined;

  // from the end: Reshape(Transpose(Reshape(Add(p_past·V_past, p_new·V_new), [0, heads, -1, 0]), [0, 2, 1, 3]), [b, s, heads·d])
  const softmaxDefault = onnxOpset(parsed.fields) >= 13;
  for (const output of outputs) {
    const joined = op(output, 'Reshape');
    const back = op(joined?.inputs[0], 'Transpose');
    const heads = regrouped(op(back?.inputs[0], 'Reshape'));
    const sum = op(op(back?.inputs[0], 'Reshape')?.inputs[0], 'Add');
    if (!joined || !perm(back, [0, 2, 1, 3]) || !heads || !sum) continue;
    const width = op(joined.inputs[1], 'Concat')?.inputs.at(-1);
    const [mPast, mNew] = sum.inputs.map((x) => op(x, 'MatMul'));
    const parts = op(mPast?.inputs[0], 'Split');
    if (!mPast || !mNew || parts?.outputs.length !== 2 || parts.outputs[0] !== mPast.inputs[0] || parts.outputs[1] !== mNew.inputs[0]) {
      continue;
    }
    if (!lastAxis(parts, false) || !given.has(mPast.inputs[1]!)) continue;
    const byGroup = op(parts.inputs[0], 'Reshape');
    const kvHeads = regrouped(byGroup);
    const softmax = op(byGroup?.inputs[0], 'Softmax');
    const masked = op(softmax?.inputs[0], 'Add');
    if (!kvHeads || !softmax || !lastAxis(softmax, softmaxDefault) || !masked) continue;
    const mask = masked.inputs.find((x) => given.has(x));
    const ungrouped = op(masked.inputs.find((x) => x !== mask), 'Reshape');
    const scores = op(ungrouped?.inputs[0], 'Concat');
    if (!mask || regrouped(ungrouped) !== heads || scores?.inputs.length !== 2 || !lastAxis(scores, false)) continue;
    // each half: MatMul(queries, Transpose(keys, [0, 1, 3, 2])) / divisor
    const halves = scores.inputs.map((x) => {
      const div = op(x, 'Div');
      const mm = op(div?.inputs[0], 'MatMul');
      const keys = op(mm?.inputs[1], 'Transpose');
      return div && mm && perm(keys, [0, 1, 3, 2])
        ? { divisor: scalarOf(div.inputs[1], c), q: mm.inputs[0]!, keys: keys!.inputs[0]! }
        : undefined;
    });
    const [past, now] = halves;
    if (!past || !now || past.q !== now.q || !past.divisor || past.divisor !== now.divisor || !given.has(past.keys)) continue;
    const qr = rotary(
      op(regrouped(op(past.q, 'Reshape')) === kvHeads ? op(past.q, 'Reshape')!.inputs[0] : undefined, 'RotaryEmbedding', MS),
    );
    const kr = rotary(op(now.keys, 'RotaryEmbedding', MS));
    const q = split(qr?.x), k = split(kr?.x), v = split(mNew.inputs[1]);
    if (!qr || !kr || !q || !k || !v || kr.pos !== qr.pos || kr.cos !== qr.cos || kr.sin !== qr.sin) continue;
    if (q.heads !== heads || k.heads !== kvHeads || v.heads !== kvHeads || heads % kvHeads || q.d !== k.d || q.d !== v.d || q.d % 2) {
      continue;
    }
    if (String(intsOf(width ?? '', c)) !== String(heads * q.d)) continue;
    // what else the stage hands on: the rotated new keys and the new values, or copies of them
    const keys: string[] = [], values: string[] = [];
    const same = (x: string) => {
      let n = made.get(x);
      while (n?.opType === 'Identity' && !n.domain) x = n.inputs[0]!, n = made.get(x);
      return x;
    };
    for (const o of outputs) {
      if (o === output) continue;
      const of = same(o);
      if (of === now.keys) keys.push(o);
      else if (of === v.t.outputs[0]) values.push(o);
      else return undefined;
    }
    return {
      q: q.x,
      k: k.x,
      v: v.x,
      pos: qr.pos,
      cos: qr.cos,
      sin: qr.sin,
      pastKey: past.keys,
      pastValue: mPast.inputs[1]!,
      mask,
      heads,
      kvHeads,
      headSize: q.d,
      divisor: past.divisor,
      output,
      keys,
      values,
    };
  }
  return undefined;
}
