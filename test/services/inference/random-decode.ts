/**
 * Constrained decoding without a model, shared by the structured-output tests: random logits over the
 * tiny-llama vocabulary pushed through the constraint's processor, the best token taken each step.
 */
import { join } from 'node:path';
import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import { createConstrainedProcessor, grammarOf, type OutputConstraint, vocabOf } from '../../../src/services/inference/structured/index.ts';
import { seededRandom } from '../../../src/services/inference/sampling.ts';
import { FIXTURE_MODELS_DIR } from '../../support/hub-stand-in.ts';

/** tiny-llama's end-of-turn and end-of-text tokens. */
export const EOS = [478, 476];

export const tinyLlamaTokenizer = (): Promise<PreTrainedTokenizer> =>
  AutoTokenizer.from_pretrained(join(FIXTURE_MODELS_DIR, 'tiny-llama'), { local_files_only: true } as never);

/**
 * Decodes up to `maxNew` tokens under `c`; the text, the token count and whether it ended with EOS. A
 * weak-model stand-in: random scores, with `peaky` one token strongly preferred throughout (e.g. a quote
 * that never closes), `favoured` tokens scored far above the rest, and now and then EOS far too early.
 */
export function decodeRandom(
  tok: PreTrainedTokenizer,
  c: OutputConstraint,
  seed: number,
  maxNew: number,
  peaky = false,
  favoured: number[] = [],
) {
  const grammar = grammarOf(c);
  const vocab = vocabOf(tok);
  const rand = seededRandom(seed);
  const prompt = [1n, 2n, 3n];
  const proc = createConstrainedProcessor(grammar, vocab, EOS, prompt.length, maxNew);
  const ids = [...prompt];
  const out: number[] = [];
  const favourite = Math.floor(rand() * 485);
  for (let step = 0; step < maxNew; step++) {
    const data = new Float32Array(485);
    for (let i = 0; i < data.length; i++) data[i] = rand() * 4;
    if (peaky) data[favourite] = 50;
    for (const id of favoured) data[id] = 20 + rand() * 4;
    if (rand() < 0.05) { for (const e of EOS) data[e] = 100; }
    proc([ids], { data, dims: [1, 485] });
    let best = 0;
    for (let i = 1; i < data.length; i++) if (data[i] > data[best]) best = i;
    ids.push(BigInt(best));
    out.push(best);
    if (EOS.includes(best)) break;
  }
  const text = tok.decode(out, { skip_special_tokens: true });
  return { text, tokens: out.length, ended: EOS.includes(out.at(-1)!) };
}
