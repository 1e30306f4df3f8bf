/** torch's reference prompt run through a tiny-llama graph on an empty cache, as one session call. */
import { REF } from './reference.ts';

type TensorCtor = new (type: string, data: unknown, dims: number[]) => unknown;
interface SessionLike {
  inputNames: readonly string[];
  run(feeds: never): Promise<Record<string, { data: unknown }>>;
}

/** The call's logits, every position's (tiny-llama: 2 KV heads of 8). */
export async function promptLogits(s: SessionLike, Tensor: TensorCtor): Promise<Float32Array> {
  const ids = REF.generate.prompt_ids;
  const t = (xs: number[]) => new Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
  const f: Record<string, unknown> = { input_ids: t(ids), attention_mask: t(ids.map(() => 1)), position_ids: t(ids.map((_, i) => i)) };
  for (const name of s.inputNames) {
    if (name.startsWith('past_key_values.')) f[name] = new Tensor('float32', new Float32Array(0), [1, 2, 0, 8]);
    if (name === 'num_logits_to_keep') f[name] = new Tensor('int64', BigInt64Array.of(0n), []);
  }
  return (await s.run(f as never)).logits!.data as Float32Array;
}

/**
 * The same prompt a position at a time, each call on the cache the call before left: every call quantizes one
 * position's activations by itself, as svc's 8-bit kernels do (a graph's DynamicQuantizeLinear takes a call's
 * positions together). Every position's logits, joined.
 */
export async function promptLogitsByPosition(s: SessionLike, Tensor: TensorCtor): Promise<Float32Array> {
  const ids = REF.generate.prompt_ids;
  const t = (xs: number[]) => new Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
  const pastNames = s.inputNames.filter((name) => name.startsWith('past_key_values.'));
  let past: Record<string, unknown> = Object.fromEntries(
    pastNames.map((name) => [name, new Tensor('float32', new Float32Array(0), [1, 2, 0, 8])]),
  );
  const parts: Float32Array[] = [];
  for (let j = 0; j < ids.length; j++) {
    const f: Record<string, unknown> = {
      input_ids: t([ids[j]!]),
      attention_mask: t(ids.slice(0, j + 1).map(() => 1)),
      position_ids: t([j]),
      ...past,
    };
    if (s.inputNames.includes('num_logits_to_keep')) f.num_logits_to_keep = new Tensor('int64', BigInt64Array.of(0n), []);
    const out = await s.run(f as never);
    parts.push(out.logits!.data as Float32Array);
    past = Object.fromEntries(pastNames.map((name) => [name, out[name.replace('past_key_values', 'present')]]));
  }
  const all = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((at, p) => (all.set(p, at), at + p.length), 0);
  return all;
}
