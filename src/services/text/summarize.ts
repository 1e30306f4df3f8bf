/**
 * Summaries of any length by map-reduce: a text that fits one chunk is summarised in one call; a longer
 * one is cut into chunks, each chunk summarised (map), and the partial summaries combined (reduce),
 * recursively while they still exceed one chunk. Nothing is truncated.
 */
import type { ChatService } from '../chat/chat-service.ts';
import { countTokens, textChunks } from './chunks.ts';
import { generateText } from './generate.ts';

export type SummaryLength = 'short' | 'medium' | 'long';
export type SummaryFormat = 'prose' | 'bullets';

export interface SummarizeOptions {
  chat: ChatService;
  model: string;
  length: SummaryLength;
  format: SummaryFormat;
  /** Free-text style or focus ("for executives", "focus on risks"). */
  style?: string;
  /** Output language name (default: the text's own). */
  language?: string;
  chunkTokens: number;
  signal?: AbortSignal;
  progress?: (done: number, total: number) => void;
}

const WORDS: Record<SummaryLength, string> = {
  short: 'at most 3 sentences',
  medium: 'about one paragraph (5-8 sentences)',
  long: 'several paragraphs',
};
const BULLETS: Record<SummaryLength, string> = {
  short: 'at most 3 bullet points',
  medium: '4 to 7 bullet points',
  long: '8 to 15 bullet points',
};
const MAX_TOKENS: Record<SummaryLength, number> = { short: 160, medium: 400, long: 900 };

export async function summarize(text: string, o: SummarizeOptions) {
  const chunks = textChunks(text, o.chunkTokens);
  let calls = 0;
  let total = chunks.length === 1 ? 1 : chunks.length + 1;
  const step = () => o.progress?.(++calls, Math.max(total, calls));
  const extra = [o.style ? `Style and focus: ${o.style}.` : '', o.language ? `Write in ${o.language}.` : ''].filter(Boolean).join(' ');
  let model = o.model;
  const call = async (system: string, user: string, maxTokens: number) => {
    const r = await generateText(o.chat, { model: o.model, system, user, maxTokens, signal: o.signal });
    model = r.model;
    step();
    return r.text;
  };
  const finalSystem = (combined: boolean) => {
    const shape = o.format === 'bullets' ? `as ${BULLETS[o.length]}, each line starting with "- "` : `in ${WORDS[o.length]} of prose`;
    return `You summarise ${
      combined ? 'the partial summaries of one long document into one summary of the whole document' : 'documents'
    } ${shape}. Keep facts, names and numbers exact; add nothing. ${extra} Answer with the summary only.`.trim();
  };
  if (chunks.length === 1) {
    const summary = await call(finalSystem(false), text, MAX_TOKENS[o.length]);
    return { summary, model, method: 'single-pass', chunks: 1, calls };
  }
  // map
  const mapSystem = `You summarise one part of a longer document in a few sentences. Keep facts, names and numbers exact; add nothing. ${
    o.language ? `Write in ${o.language}.` : ''
  } Answer with the summary only.`.trim();
  // a partial summary is kept well under a chunk, so that two of them always fit one reduce call
  const partialTokens = Math.min(MAX_TOKENS.short, Math.max(16, Math.floor(o.chunkTokens / 2)));
  let partials: string[] = [];
  for (let i = 0; i < chunks.length; i++) {
    partials.push(await call(mapSystem, `Part ${i + 1} of ${chunks.length}:\n\n${chunks[i]}`, partialTokens));
  }
  // reduce, level by level, while the partial summaries do not fit one chunk together
  let levels = 1;
  while (partials.length > 1 && countTokens(partials.join('\n\n')) > o.chunkTokens) {
    const groups = groupToFit(partials, o.chunkTokens);
    total += groups.length;
    const next: string[] = [];
    for (const g of groups) next.push(await call(mapSystem, g.join('\n\n'), partialTokens));
    partials = next;
    levels++;
  }
  const summary = await call(finalSystem(true), partials.map((p, i) => `Part ${i + 1}:\n${p}`).join('\n\n'), MAX_TOKENS[o.length]);
  return { summary, model, method: 'map-reduce', chunks: chunks.length, calls, reduce_levels: levels };
}

function groupToFit(items: string[], maxTokens: number): string[][] {
  const groups: string[][] = [];
  let cur: string[] = [];
  let size = 0;
  for (const it of items) {
    const t = countTokens(it);
    // at least two per group, so every level shrinks even when one partial alone fills a chunk
    if (cur.length >= 2 && size + t > maxTokens) (groups.push(cur), (cur = []), (size = 0));
    cur.push(it);
    size += t;
  }
  if (cur.length) groups.push(cur);
  return groups;
}
