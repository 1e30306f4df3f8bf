/**
 * Grouped-query attention without repeating the key/value heads. Exports of GQA decoders (Qwen2, Llama 3,
 * Mistral...) copy each KV head once per query head of its group (Unsqueeze → Expand → Reshape) before
 * the two attention MatMuls, so every decode step writes the whole cache again, `heads / kvHeads` times
 * over: at a 2,000-token context that copy was a sixth of a Qwen2.5-0.5B step.
 *
 * The rewrite groups the queries instead. Query heads are numbered group by group (head h reads KV head
 * h / group), so queries [b, heads, q, d] reshape for free to [b, kvHeads, group·q, d]; one MatMul per KV
 * head against the unrepeated keys gives the scores, which reshape back to [b, heads, q, t]. The
 * probabilities do the same against the unrepeated values. Ops between the repeat and the MatMul that act
 * on each head alone (the key's transpose, a scalar scale) move onto the unrepeated tensor; a scalar scale
 * right after the scores stays next to its MatMul, where ONNX Runtime fuses it. The products and sums are
 * the same ones: the logits agree to float rounding (tested against the exported graph and torch).
 *
 * One of the edits of ./decoder-graph.ts.
 */
import { type GraphNode, int64Tensor, intsAttr, node, type WireWriter } from '../models/onnx-wire.ts';
import { type DecoderShape, type GraphEdit, onlyUse, renamed } from './decoder-graph.ts';

const GROUPS = 'svc_gqa_kv_groups';
const HEADS = 'svc_gqa_heads';

/** Groups the queries of every attention that reads repeated KV heads; returns how many MatMuls read them. */
export function groupAttention(g: GraphEdit, h: DecoderShape): number {
  if (h.heads === h.kvHeads) return 0;
  const scalarScale = (n: GraphNode, x: string) =>
    (n.opType === 'Mul' || n.opType === 'Div') && !n.domain && n.inputs[0] === x && g.constant.get(n.inputs[1]!)?.size === 1;
  let grouped = 0;
  for (const e of g.nodes) {
    if (e.opType !== 'Expand' || e.domain) continue;
    const u = g.producer.get(e.inputs[0]!);
    if (u?.opType !== 'Unsqueeze' || u.domain || onlyUse(g, u.outputs[0]!) !== e) continue;
    const axes = u.inputs[1] ? g.constant.get(u.inputs[1])?.ints : intsAttr(u, 'axes');
    if (axes?.length !== 1 || axes[0] !== 2) continue;
    const r = onlyUse(g, e.outputs[0]!);
    if (r?.opType !== 'Reshape' || r.domain) continue;
    // head-wise ops up to the MatMul that reads the repeated heads as its right operand
    const between: GraphNode[] = [];
    let at = r.outputs[0]!;
    let mm: GraphNode | undefined;
    for (let n = onlyUse(g, at); n; n = onlyUse(g, at)) {
      if (n.opType === 'MatMul' && !n.domain && n.inputs[1] === at && n.inputs[0] !== at) {
        mm = n;
        break;
      }
      const transpose = n.opType === 'Transpose' && !n.domain && `${intsAttr(n, 'perm')}` === '0,1,3,2';
      if (!transpose && !scalarScale(n, at)) break;
      between.push(n);
      at = n.outputs[0]!;
    }
    if (!mm) continue;
    const after = onlyUse(g, mm.outputs[0]!);
    const scale = after && scalarScale(after, mm.outputs[0]!) ? after : undefined;

    const p = `svc_gqa_${grouped}`;
    const out: WireWriter[] = [];
    let x = u.inputs[0]!;
    between.forEach((n, i) => {
      out.push(renamed(n, [x, ...n.inputs.slice(1)], [`${p}_kv${i}`], `${p}_kv${i}`));
      x = `${p}_kv${i}`;
    });
    out.push(
      node('Reshape', [mm.inputs[0]!, GROUPS], [`${p}_a`], `${p}_a`),
      node('MatMul', [`${p}_a`, x], [`${p}_mm`], `${p}_mm`),
    );
    let y = `${p}_mm`;
    if (scale) {
      out.push(renamed(scale, [y, scale.inputs[1]!], [`${p}_scaled`], `${p}_scaled`));
      y = `${p}_scaled`;
    }
    out.push(node('Reshape', [y, HEADS], [(scale ?? mm).outputs[0]!], `${p}_heads`));
    for (const n of [u, e, r, ...between, mm, ...(scale ? [scale] : [])]) g.removed.add(n);
    g.read.add(x).add(mm.inputs[0]!);
    for (const n of [...between, ...(scale ? [scale] : [])]) for (const i of n.inputs.slice(1)) g.read.add(i);
    g.replace.set((scale ?? mm).index, out);
    grouped++;
  }
  if (grouped) g.initializers.push(int64Tensor(GROUPS, [0, h.kvHeads, -1, 0]), int64Tensor(HEADS, [0, h.heads, -1, 0]));
  return grouped;
}
