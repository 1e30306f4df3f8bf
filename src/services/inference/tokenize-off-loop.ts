/**
 * Tokenization of large inputs in the worker pool: a tokenizer walks every character in JavaScript, which
 * for a long prompt or document held the event loop for seconds. Inputs below OFF_LOOP_CHARS stay on the
 * loop (the hop would cost more than the work). The worker loads the same tokenizer files with the same
 * library, so the ids are the same.
 */
import { workers } from '../workers/index.ts';
import type { LoadedModel } from './load.ts';

export const OFF_LOOP_CHARS = 16_384;

/** Token ids per text, or null when the texts are small enough to tokenize on the loop. */
export async function tokenizeOffLoop(
  m: LoadedModel,
  texts: string[],
  addSpecialTokens: boolean,
  signal?: AbortSignal,
): Promise<number[][] | null> {
  let chars = 0;
  for (const t of texts) chars += t.length;
  if (chars < OFF_LOOP_CHARS) return null;
  const ids = await workers.run('text.tokenize', [m.dir, texts, addSpecialTokens], { signal });
  return ids.map((a) => Array.from(a));
}
