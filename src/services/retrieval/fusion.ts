/**
 * Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): each ranked list gives an item
 * weight / (k + rank); the fused score is the sum. Ranks, not raw scores, are combined, so BM25 and
 * cosine distances need no common scale. k = 60 is the paper's constant. The score returned is divided by
 * the best score possible (rank 1 in every list), so it lies in (0, 1].
 */
export interface Ranked {
  id: number;
}

export const RRF_K = 60;

export function reciprocalRankFusion(
  lists: { hits: Ranked[]; weight: number }[],
  limit: number,
  k = RRF_K,
): { id: number; score: number }[] {
  const scores = new Map<number, number>();
  for (const { hits, weight } of lists) {
    hits.forEach((h, i) => scores.set(h.id, (scores.get(h.id) ?? 0) + weight / (k + i + 1)));
  }
  const best = lists.reduce((a, l) => a + (l.hits.length ? l.weight / (k + 1) : 0), 0) || 1;
  return [...scores].map(([id, s]) => ({ id, score: s / best })).sort((a, b) => b.score - a.score || a.id - b.id).slice(0, limit);
}

/**
 * Hybrid search's last step: the keyword and semantic lists fused (a mode weighs the other list at 0), each
 * fused id that still has a row returned with its row, fused score and rank in each list.
 */
export async function fuseHybrid<R>(
  keywordHits: Ranked[],
  semanticHits: Ranked[],
  o: { mode: 'hybrid' | 'keyword' | 'semantic'; semanticWeight: number; limit: number },
  rowsOf: (ids: number[]) => Promise<Map<number, R>>,
): Promise<{ chunk: R; score: number; keywordRank?: number; semanticRank?: number }[]> {
  const w = o.semanticWeight;
  const fused = reciprocalRankFusion([
    { hits: keywordHits, weight: o.mode === 'semantic' ? 0 : 1 - w },
    { hits: semanticHits, weight: o.mode === 'keyword' ? 0 : w },
  ], o.limit);
  const rows = await rowsOf(fused.map((f) => f.id));
  const kRank = new Map(keywordHits.map((h, i) => [h.id, i + 1]));
  const sRank = new Map(semanticHits.map((h, i) => [h.id, i + 1]));
  return fused.filter((f) => rows.has(f.id)).map((f) => ({
    chunk: rows.get(f.id)!,
    score: f.score,
    keywordRank: kRank.get(f.id),
    semanticRank: sRank.get(f.id),
  }));
}
