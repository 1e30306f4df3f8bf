/**
 * Attention that reads the cached positions and the new ones apart. Exported decoders concatenate each
 * layer's past keys and values with the positions a call adds (`present.N.key`) and attend over that, so
 * every decode step copied the whole cache, in every layer, even where the decode loop keeps its cache in
 * place and fetches only the new positions (./new-key-values.ts, ./batch-decoder.ts), and ONNX Runtime kept
 * room for that second copy of the whole cache in its own memory (the copying itself costs little time).
 *
 * The same sums, split at the past's length:
 * - scores: `q·[past; new]ᵀ` = `[q·pastᵀ, q·newᵀ]` (the scalar scale, if any, on each half);
 * - output: `p·[past; new]` = `p[..., :past]·past + p[..., past:]·new` (one Split of the probabilities).
 * The mask and softmax still see the concatenated scores, so the logits agree to float rounding.
 *
 * The whole cache is still an output for the callers that want it (a prefill, transformers.js' own loop):
 * the concatenations move into an `If` on a boolean input, `svc_present`, and run only when it is true.
 * The inference thread sets it from what a call fetches (./ort-sessions.ts); callers never see the input.
 *
 * One of the edits of ./decoder-graph.ts, made in a second pass over the first pass's grouped attention.
 */
import {
  declaredDims,
  elemTypeOf,
  graphAttr,
  type GraphNode,
  int64Tensor,
  intAttr,
  intsAttr,
  node,
  ONNX,
  tensor,
  tensorAttr,
  tensorValueInfo,
  WireWriter,
} from '../models/onnx-wire.ts';
import { type GraphEdit, onlyUse, renamed } from './decoder-graph.ts';

/** The graph input that asks for `present.*`: true computes them, false leaves them empty. */
export const PRESENT_SWITCH = 'svc_present';

const P = 'svc_pan';
/** [past length, new length]: where the probabilities split. */
const SPLIT = `${P}_split`;
const TWO = `${P}_two`;
const ONE = `${P}_one`;

interface Layer {
  key: string;
  value: string;
  /** the Concats of past and new that made `present.*` */
  catK: GraphNode;
  catV: GraphNode;
  /** Transpose of the keys, the scores' MatMul and its scalar scale; the output MatMul */
  transpose: GraphNode;
  scores: GraphNode;
  scale?: GraphNode;
  output: GraphNode;
}

/** Rewrites every layer whose attention reads `present.*` as exported; returns how many. */
export function attendPastAndNew(g: GraphEdit, opset: number): number {
  // Split with its sizes as an input needs opset 13
  if (opset < 13 || [...g.producer.keys()].some((n) => n.startsWith(P))) return 0;
  const layers = [...g.outputs.keys()].filter((n) => /^present\..*\.key$/.test(n)).map((key) => layerOf(g, key))
    .filter((l): l is Layer => l !== undefined);
  if (!layers.length) return 0;

  const firstOutput = Math.min(...layers.map((l) => l.output.index));
  layers.forEach((l, i) => {
    const p = `${P}_${i}`;
    const [pastK, newK] = l.catK.inputs as [string, string];
    const [pastV, newV] = l.catV.inputs as [string, string];
    const q = l.scores.inputs[0]!;
    const last = l.scale ?? l.scores;
    const keys: WireWriter[] = [
      renamed(l.transpose, [pastK], [`${p}_past_t`], `${p}_past_t`),
      renamed(l.transpose, [newK], [`${p}_new_t`], `${p}_new_t`),
      node('MatMul', [q, `${p}_past_t`], [`${p}_past_s`], `${p}_past_s`),
      node('MatMul', [q, `${p}_new_t`], [`${p}_new_s`], `${p}_new_s`),
    ];
    let halves = [`${p}_past_s`, `${p}_new_s`];
    if (l.scale) {
      const s = l.scale;
      keys.push(...halves.map((h) => renamed(s, [h, s.inputs[1]!], [`${h}_scaled`], `${h}_scaled`)));
      halves = halves.map((h) => `${h}_scaled`);
      g.read.add(s.inputs[1]!);
    }
    keys.push(node('Concat', halves, [last.outputs[0]!], `${p}_scores`, '', { axis: -1 }));
    g.replace.set(last.index, keys);

    const probs = l.output.inputs[0]!;
    const values: WireWriter[] = l.output.index === firstOutput
      ? [
        // the lengths every layer shares (one call feeds every layer the same past and new positions)
        node('Shape', [pastV], [`${P}_past_shape`], `${P}_past_shape`),
        node('Gather', [`${P}_past_shape`, TWO], [`${P}_past_len`], `${P}_past_len`, '', { axis: 0 }),
        // the new length: the token ids' sequence where the graph takes them (made before the first layer then),
        // else the new values' [batch, heads, new, head size]
        node('Shape', [g.tokens ?? newV], [`${P}_new_shape`], `${P}_new_shape`),
        node('Gather', [`${P}_new_shape`, g.tokens ? ONE : TWO], [`${P}_new_len`], `${P}_new_len`, '', { axis: 0 }),
        node('Concat', [`${P}_past_len`, `${P}_new_len`], [SPLIT], SPLIT, '', { axis: 0 }),
      ]
      : [];
    values.push(
      node('Split', [probs, SPLIT], [`${p}_past_p`, `${p}_new_p`], `${p}_split`, '', { axis: -1 }),
      node('MatMul', [`${p}_past_p`, pastV], [`${p}_past_o`], `${p}_past_o`),
      node('MatMul', [`${p}_new_p`, newV], [`${p}_new_o`], `${p}_new_o`),
      node('Add', [`${p}_past_o`, `${p}_new_o`], [l.output.outputs[0]!], `${p}_o`),
    );
    g.replace.set(l.output.index, values);
    for (const n of [l.catK, l.catV, l.transpose, l.scores, l.output, ...(l.scale ? [l.scale] : [])]) g.removed.add(n);
    for (const name of [q, probs, pastK, newK, pastV, newV]) g.read.add(name);
  });
  g.initializers.push(int64Tensor(TWO, [2]), int64Tensor(ONE, [1]));
  if (g.tokens) g.read.add(g.tokens);
  g.appended.push(presentOnDemand(g, layers));
  g.newInputs.push(tensorValueInfo(PRESENT_SWITCH, ONNX.dtype.BOOL, []));
  return layers.length;
}

/** The layer of `present.N.key` when its attention is the exported one (see the file's comment). */
function layerOf(g: GraphEdit, key: string): Layer | undefined {
  const value = key.replace(/key$/, 'value');
  const catK = cacheConcat(g, key), catV = cacheConcat(g, value);
  if (!catK || !catV) return undefined;
  const transpose = soleReader(g, key);
  if (transpose?.opType !== 'Transpose' || transpose.domain || `${intsAttr(transpose, 'perm')}` !== '0,1,3,2') return undefined;
  const scores = onlyUse(g, transpose.outputs[0]!);
  if (!isMatMulOf(scores, transpose.outputs[0]!)) return undefined;
  const after = onlyUse(g, scores.outputs[0]!);
  const scalar = after && (after.opType === 'Mul' || after.opType === 'Div') && !after.domain &&
    after.inputs[0] === scores.outputs[0] && g.constant.get(after.inputs[1]!)?.size === 1;
  const output = soleReader(g, value);
  if (!isMatMulOf(output, value)) return undefined;
  return { key, value, catK, catV, transpose, scores, scale: scalar ? after : undefined, output };
}

/** The Concat of `past_key_values.*` and the new positions along the sequence axis that makes `present`. */
function cacheConcat(g: GraphEdit, present: string): GraphNode | undefined {
  const c = g.producer.get(present);
  if (c?.opType !== 'Concat' || c.domain || c.inputs.length !== 2 || !g.outputs.has(present)) return undefined;
  return c.inputs[0] === present.replace(/^present\./, 'past_key_values.') && [2, -2].includes(intAttr(c, 'axis') ?? NaN) ? c : undefined;
}

/** The one node reading `name` (which may also be a graph output). */
function soleReader(g: GraphEdit, name: string): GraphNode | undefined {
  const c = g.consumers.get(name);
  return c?.length === 1 ? c[0] : undefined;
}

function isMatMulOf(n: GraphNode | undefined, right: string): n is GraphNode {
  return n?.opType === 'MatMul' && !n.domain && n.inputs[1] === right && n.inputs[0] !== right;
}

/**
 * One `If` on PRESENT_SWITCH giving every rewritten `present.*`: the Concats as exported when true; when
 * false, empty tensors of the declared rank and fixed dimensions (so ONNX Runtime finds them as declared).
 */
function presentOnDemand(g: GraphEdit, layers: Layer[]): WireWriter {
  const then = new WireWriter(), otherwise = new WireWriter();
  const outputs: string[] = [];
  for (const l of layers) {
    for (const [name, cat] of [[l.key, l.catK], [l.value, l.catV]] as const) {
      const info = g.outputs.get(name)!;
      const elem = elemTypeOf(info);
      const whole = `${P}_then_${name}`, empty = `${P}_else_${name}`;
      then.message(ONNX.graph.node, renamed(cat, cat.inputs, [whole], whole));
      then.message(ONNX.graph.output, tensorValueInfo(whole, elem));
      const dims = (declaredDims(info) ?? [-1, -1, -1, -1]).map((d) => Math.max(d, 0));
      if (dims.every((d) => d > 0)) dims[0] = 0;
      const value = tensor(empty, dims, elem, new Uint8Array(0));
      otherwise.message(ONNX.graph.node, node('Constant', [], [empty], empty, '', {}, [tensorAttr('value', value)]));
      otherwise.message(ONNX.graph.output, tensorValueInfo(empty, elem));
      outputs.push(name);
    }
  }
  then.string(ONNX.graph.name, `${P}_whole_cache`);
  otherwise.string(ONNX.graph.name, `${P}_no_cache`);
  return node('If', [PRESENT_SWITCH], outputs, `${P}_present`, '', {}, [
    graphAttr('then_branch', then),
    graphAttr('else_branch', otherwise),
  ]);
}
