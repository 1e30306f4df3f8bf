/**
 * Worker side of large tokenizations: a model's tokenizer (transformers.js, from its local files), cached
 * per model folder and reloaded when tokenizer.json changes.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { localFilesOnly } from '../inference/local-files.ts';

type Tok = (text: string, o: { add_special_tokens: boolean }) => { input_ids: { tolist(): bigint[][] } };
const cache = new Map<string, { mtime: number; tok: Promise<Tok> }>();

async function tokenizerFor(dir: string): Promise<Tok> {
  const mtime = (await stat(join(dir, 'tokenizer.json')).catch(() => null))?.mtimeMs ?? 0;
  const hit = cache.get(dir);
  if (hit && hit.mtime === mtime) return hit.tok;
  const tok = import('@huggingface/transformers').then(async (tf) => {
    localFilesOnly(tf.env);
    return (await tf.AutoTokenizer.from_pretrained(dir)) as unknown as Tok;
  });
  if (cache.size >= 4) cache.delete(cache.keys().next().value!);
  cache.set(dir, { mtime, tok });
  tok.catch(() => cache.delete(dir));
  return tok;
}

export async function tokenize(dir: string, texts: string[], addSpecialTokens: boolean): Promise<Int32Array[]> {
  const tok = await tokenizerFor(dir);
  return texts.map((t) => Int32Array.from(tok(t, { add_special_tokens: addSpecialTokens }).input_ids.tolist()[0]!, Number));
}
