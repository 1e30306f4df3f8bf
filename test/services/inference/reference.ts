/** Outputs of the tiny fixture models computed by torch (scripts/models/reference-outputs.py). */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface References {
  torch: string;
  embed: {
    inputs: { text: string; ids: number[]; embedding: number[] }[];
    long: { text: string; tokens: number; windows: number; embedding: number[]; first_window: number[] };
  };
  rerank: { pairs: { query: string; passage: string; ids: number[]; logit: number }[] };
  generate: { prompt_ids: number[]; last_logits: number[]; greedy_ids: number[] };
}

export const REF = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../fixtures/models/reference-outputs.json', import.meta.url)), 'utf8'),
) as References;

/** Largest absolute difference, for messages. */
export const maxDiff = (
  a: readonly number[],
  b: readonly number[],
) => (a.length !== b.length ? Infinity : Math.max(...a.map((x, i) => Math.abs(x - b[i]!))));

/**
 * torch's reference prompt greedy-decoded by transformers.js' own `generate` (KV cache included), as many
 * tokens as torch's greedy continuation (or `n`): the new token ids, to compare with REF.generate.greedy_ids.
 */
export async function greedyOnReferencePrompt(
  model: { generate(o: never): Promise<unknown> },
  Tensor: typeof import('@huggingface/transformers').Tensor,
  n = REF.generate.greedy_ids.length,
): Promise<number[]> {
  const ids = REF.generate.prompt_ids;
  const t = (xs: number[]) => new Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
  const out = (await model.generate({
    input_ids: t(ids),
    attention_mask: t(ids.map(() => 1)),
    max_new_tokens: n,
    min_new_tokens: n,
    do_sample: false,
    repetition_penalty: 1,
  } as never)) as { tolist(): bigint[][] };
  return out.tolist()[0]!.slice(ids.length).map(Number);
}
