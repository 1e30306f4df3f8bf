/** Cross-encoder scoring: (query, document) pairs through a sequence-classification head. */
import type { LoadedModel } from './load.ts';

export interface PairScore {
  /** Raw relevance logit (higher = more relevant). */
  logit: number;
  /** sigmoid(logit), in 0..1. */
  score: number;
}

type PairTok = (a: string[], o: Record<string, unknown>) => Record<string, unknown>;

export async function scorePairs(m: LoadedModel, query: string, documents: string[], batchSize = 16): Promise<PairScore[]> {
  const out: PairScore[] = [];
  for (let b = 0; b < documents.length; b += batchSize) {
    const docs = documents.slice(b, b + batchSize);
    const inputs = (m.tokenizer as unknown as PairTok)(
      docs.map(() => query),
      { text_pair: docs, padding: true, truncation: true, max_length: m.maxTokens },
    );
    const { logits } = await (m.model as unknown as (x: unknown) => Promise<{ logits: { data: Float32Array; dims: number[] } }>)(inputs);
    const labels = logits.dims[1];
    for (let i = 0; i < docs.length; i++) {
      // one label: the relevance logit; two labels: "relevant" minus "not relevant"
      const logit = labels === 1 ? logits.data[i] : logits.data[i * labels + 1] - logits.data[i * labels];
      out.push({ logit, score: 1 / (1 + Math.exp(-logit)) });
    }
  }
  return out;
}
