/**
 * Log-probabilities of the generated tokens, taken from the distribution the token was drawn from: the
 * logits after penalties and constraints (a masked token has probability 0 and is never listed), divided by
 * the temperature (1 under greedy decoding), normalised over the whole vocabulary. top_p / top_k truncation
 * is not applied to the reported values (OpenAI reports the model's distribution the same way).
 */
import type { LogitsProcessorFn } from './sampling.ts';

export interface TokenAlternative {
  token: string;
  logprob: number;
  bytes: number[];
}
export interface TokenLogprob extends TokenAlternative {
  top_logprobs: TokenAlternative[];
}

export interface LogprobRecorder {
  /** Runs after every other processor but the sampler: remembers this step's distribution. */
  processor: LogitsProcessorFn;
  /** The token chosen at the last recorded step. */
  chosen(id: number): void;
  /** Tokens recorded since the last call. */
  take(): TokenLogprob[];
  all: TokenLogprob[];
}

export function createLogprobRecorder(
  top: number,
  temperature: number,
  tokenBytes: (id: number) => Uint8Array,
  skip: Set<number>,
): LogprobRecorder {
  const t = temperature > 0 ? temperature : 1;
  const dec = new TextDecoder();
  const alt = (id: number, logprob: number): TokenAlternative => {
    const b = tokenBytes(id);
    return { token: dec.decode(b), logprob, bytes: [...b] };
  };
  let step: { data: Float32Array; lse: number; top: TokenAlternative[] } | undefined;
  const all: TokenLogprob[] = [];
  let taken = 0;
  return {
    all,
    processor(_ids, logits) {
      const data = Float32Array.from(logits.data as Float32Array);
      let max = -Infinity;
      for (let i = 0; i < data.length; i++) if (data[i] > max) max = data[i];
      let z = 0;
      if (max > -Infinity) { for (let i = 0; i < data.length; i++) z += Math.exp((data[i] - max) / t); }
      const lse = max / t + Math.log(z);
      // the `top` largest finite logits (a small insertion list: top ≤ 20)
      const best: number[] = [];
      if (top > 0) {
        for (let i = 0; i < data.length; i++) {
          const v = data[i];
          if (v === -Infinity || Number.isNaN(v)) continue;
          if (best.length === top && v <= data[best[top - 1]]) continue;
          let j = best.length === top ? top - 1 : best.length;
          while (j > 0 && data[best[j - 1]] < v) {
            best[j] = best[j - 1];
            j--;
          }
          best[j] = i;
        }
      }
      step = { data, lse, top: best.map((i) => alt(i, data[i] / t - lse)) };
      return logits;
    },
    chosen(id) {
      if (!step) return;
      if (!skip.has(id)) all.push({ ...alt(id, step.data[id] / t - step.lse), top_logprobs: step.top });
      step = undefined;
    },
    take() {
      const out = all.slice(taken);
      taken = all.length;
      return out;
    },
  };
}
