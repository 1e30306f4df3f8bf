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
