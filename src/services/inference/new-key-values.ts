/**
 * Each layer's new keys and values as outputs of their own. Exported decoders return the whole cache
 * (`present.N.key`: the past concatenated with the positions the call adds), so a loop that keeps its
 * cache in place still had ONNX Runtime write out and return all of it at every step. With the new
 * positions as outputs (`new_key_values.N.key`), the decode loop feeds its cache at a fixed capacity (the
 * unused positions masked), fetches only those and writes them into its cache itself (./batch-decoder.ts).
 *
 * One of the edits of ./decoder-graph.ts.
 */
import { elemTypeOf, intAttr, node, tensorValueInfo } from '../models/onnx-wire.ts';
import type { GraphEdit } from './decoder-graph.ts';

/** The output holding the new positions of a `present.*` output. */
export const newKeyValuesOf = (present: string) => present.replace(/^present\./, 'new_key_values.');

/**
 * Adds a `new_key_values.*` output for every `present.*` output that is a Concat of its past and the new
 * positions along the sequence axis; returns how many.
 */
export function exposeNewKeyValues(g: GraphEdit): number {
  let added = 0;
  for (const [name, info] of g.outputs) {
    if (!name.startsWith('present.')) continue;
    const c = g.producer.get(name);
    if (c?.opType !== 'Concat' || c.domain || c.inputs.length !== 2) continue;
    if (c.inputs[0] !== name.replace(/^present\./, 'past_key_values.') || ![2, -2].includes(intAttr(c, 'axis') ?? NaN)) continue;
    const out = newKeyValuesOf(name);
    if (g.outputs.has(out) || g.producer.has(out)) continue;
    g.appended.push(node('Identity', [c.inputs[1]!], [out], out));
    g.read.add(c.inputs[1]!);
    g.newOutputs.push(tensorValueInfo(out, elemTypeOf(info)));
    added++;
  }
  return added;
}
