/**
 * Lexicon sentiment (AFINN-165 through the `sentiment` package, with its negation handling): overall and
 * per sentence. The comparative score (sum of word valences / words) is mapped to a label with a small
 * dead zone, as lexicon methods are usually read.
 */
import Sentiment from 'sentiment';
import { sentences } from './sentences.ts';

export const SENTIMENT_METHOD = 'afinn-165 lexicon (English) with negation';

export type SentimentLabel = 'positive' | 'negative' | 'neutral' | 'mixed';
export interface SentimentScore {
  label: SentimentLabel;
  score: number;
  positive: number;
  negative: number;
}
export interface SentenceSentiment extends SentimentScore {
  text: string;
  start: number;
  end: number;
}

let analyser: Sentiment | undefined;
const THRESHOLD = 0.05;

function score(text: string): SentimentScore {
  const r = (analyser ??= new Sentiment()).analyze(text);
  const pos = r.calculation.reduce((s, c) => s + Math.max(0, Object.values(c)[0] as number), 0);
  const neg = r.calculation.reduce((s, c) => s + Math.max(0, -(Object.values(c)[0] as number)), 0);
  const total = pos + neg || 1;
  const comparative = Math.max(-1, Math.min(1, r.comparative / 5 * 2));
  const label: SentimentLabel = comparative > THRESHOLD
    ? 'positive'
    : comparative < -THRESHOLD
    ? 'negative'
    : pos > 0 && neg > 0
    ? 'mixed'
    : 'neutral';
  return { label, score: round(comparative), positive: round(pos / total), negative: round(neg / total) };
}

export function lexiconSentiment(text: string): { overall: SentimentScore; sentences: SentenceSentiment[] } {
  const parts = sentences(text).map((s) => ({ ...score(s.text), ...s }));
  const overall = score(text);
  // several sentences pulling in opposite directions are mixed, whatever the sum says
  if (parts.some((p) => p.label === 'positive') && parts.some((p) => p.label === 'negative') && Math.abs(overall.score) < 0.2) {
    overall.label = 'mixed';
  }
  return { overall, sentences: parts };
}

const round = (x: number) => Math.round(x * 1000) / 1000;
