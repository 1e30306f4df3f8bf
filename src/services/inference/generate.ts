/**
 * Text generation, streamed as text deltas: through the model's continuous batch (batch-decoder.ts) when
 * its graph is a plain KV-cache decoder on CPU/WASM, else through transformers.js' `generate`. Our own processors do penalties and seeded sampling; stop strings and the abort signal
 * end the loop through a stopping criterion; a streamer turns each new token into text.
 */
import { inputTooLarge } from '../errors.ts';
import type { LoadedModel } from './load.ts';
import { type ChatInput, renderChatPrompt } from './chat-prompt.ts';
import { createAsyncQueue } from './async-queue.ts';
import { createDetokenizer } from './detokenizer.ts';
import { createStopMatcher } from './stop-strings.ts';
import { batchDecoderFor } from './batch-decoder.ts';
import { createLogprobRecorder, type TokenLogprob } from './logprobs.ts';
import { vocabOf } from './structured/vocab.ts';
import {
  createPenaltyProcessor,
  createSamplerProcessor,
  type LogitsProcessorLike,
  type PenaltyOptions,
  type SamplingOptions,
} from './sampling.ts';

export type GenerationInput = { prompt: string } | ChatInput;

export interface GenerateOptions extends SamplingOptions, PenaltyOptions {
  /** Most new tokens; default: what is left of the model's context. */
  maxTokens?: number;
  stop?: string[];
  signal?: AbortSignal;
  /** Extra processors (e.g. JSON-schema constraint), run after penalties and before sampling. */
  logitsProcessors?: LogitsProcessorLike[];
  /**
   * Extra processors built once the model and prompt are known (a JSON-schema constraint needs the
   * tokenizer and the token budget); run after `logitsProcessors`.
   */
  processorsFor?: (ctx: ProcessorContext) => LogitsProcessorLike[];
  /** Context window requested by the caller (Ollama num_ctx): bounds prompt + output below the model's own. */
  contextTokens?: number;
  /**
   * false: decode alone through transformers.js' generate instead of joining the model's batch (the
   * batch path is used whenever the model's graph allows it).
   */
  batching?: boolean;
  /** Record each generated token's log-probability with this many alternatives (0–20); undefined = off. */
  logprobs?: number;
}

/** What a processor built per generation knows: the model, the budget, and how the token is chosen after it. */
export interface ProcessorContext {
  model: LoadedModel;
  promptTokens: number;
  maxNewTokens: number;
  /** The sampling that follows the processor; `fullDistribution` when logprobs read the whole distribution. */
  decode?: SamplingOptions & { fullDistribution?: boolean };
}

export type FinishReason = 'stop' | 'length';

export interface GenerationResult {
  text: string;
  promptTokens: number;
  completionTokens: number;
  finishReason: FinishReason;
  /** Per generated token (end-of-sequence excluded), when asked for. */
  logprobs?: TokenLogprob[];
  /** The stop string that ended the output (finishReason stop), when one did. */
  stopSequence?: string;
  /** Nanoseconds: model load (0 when already resident), prompt eval (until the first token), eval (the rest). */
  timings: { loadNs: number; promptEvalNs: number; evalNs: number; totalNs: number };
}

export interface TextGeneration extends AsyncIterable<string> {
  /** Settles when generation ends; rejects with the abort reason when aborted. */
  result: Promise<GenerationResult>;
  /** The rendered prompt (what the model saw). */
  prompt: string;
  /** Log-probabilities of the tokens generated since the last call (empty unless asked for). */
  takeLogprobs(): TokenLogprob[];
  /** Tokens of the rendered prompt. */
  promptTokens: number;
}

/** Monotonic time in nanoseconds (performance.now has microsecond resolution). */
const now = () => performance.now() * 1e6;

/** The prompt text the model sees, and whether the tokenizer adds its special tokens to it. */
export function renderPrompt(m: LoadedModel, input: GenerationInput): { prompt: string; addSpecialTokens: boolean } {
  return 'prompt' in input
    ? { prompt: input.prompt, addSpecialTokens: true }
    : { prompt: renderChatPrompt(m.tokenizer, input), addSpecialTokens: false };
}

/**
 * A prompt rendered ahead; `ids` when it was tokenized ahead too (large prompts, in the worker pool);
 * `vision` when it holds images: the processor's output (input_ids with the image tokens expanded,
 * attention_mask, pixel_values and what else the model takes).
 */
export interface PreparedPrompt {
  prompt: string;
  addSpecialTokens: boolean;
  ids?: number[];
  vision?: { input_ids: { dims: number[] }; attention_mask: unknown };
}

/** Tokens of a prompt exactly as generateText would feed it (count_tokens-style answers). */
export function countPromptTokens(m: LoadedModel, input: GenerationInput): number {
  const { prompt, addSpecialTokens } = renderPrompt(m, input);
  const encoded = m.tokenizer(prompt, { add_special_tokens: addSpecialTokens }) as unknown as { input_ids: { dims: number[] } };
  return encoded.input_ids.dims[1];
}

function encodedOf(m: LoadedModel, ids: number[]): { input_ids: { dims: number[] }; attention_mask: unknown } {
  const Tensor = (m.tf as unknown as { Tensor: new (type: string, data: BigInt64Array, dims: number[]) => { dims: number[] } }).Tensor;
  const n = ids.length;
  return {
    input_ids: new Tensor('int64', BigInt64Array.from(ids, BigInt), [1, n]),
    attention_mask: new Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
  };
}

export function generateText(
  m: LoadedModel,
  input: GenerationInput,
  opts: GenerateOptions = {},
  loadNs = 0,
  prepared?: PreparedPrompt,
): TextGeneration {
  const tok = m.tokenizer;
  const rendered = prepared ?? renderPrompt(m, input);
  const prompt = rendered.prompt;
  const encoded = prepared?.vision ??
    (prepared?.ids ? encodedOf(m, prepared.ids) : (tok(prompt, { add_special_tokens: rendered.addSpecialTokens }) as unknown as {
      input_ids: { dims: number[] };
      attention_mask: unknown;
    }));
  const promptTokens = encoded.input_ids.dims[1];
  // num_ctx bounds prompt + output; it never cuts the prompt (a prompt longer than it gets the model's window)
  const window = opts.contextTokens && opts.contextTokens > promptTokens ? Math.min(m.maxTokens, opts.contextTokens) : m.maxTokens;
  const room = window - promptTokens;
  if (room <= 0) throw inputTooLarge(`prompt has ${promptTokens} tokens; the model's context is ${m.maxTokens}`);
  const maxNew = Math.min(opts.maxTokens ?? room, room);

  const queue = createAsyncQueue<string>();
  const internal = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, internal.signal]) : internal.signal;
  queue.onClose(() => internal.abort(new DOMException('generation stream closed', 'AbortError')));

  const stops = createStopMatcher(opts.stop);
  const detok = createDetokenizer(tok as never);
  const eos = new Set<number>([m.model.generation_config?.eos_token_id ?? []].flat().map(Number));
  let stopped = false;
  let completionTokens = 0;
  let lastToken = -1;
  let promptDone = false;
  const t0 = now();
  let tFirst = t0;

  const emit = (text: string) => {
    if (!text || stopped) return;
    const r = stops.push(text);
    if (r.emit) queue.push(r.emit);
    if (r.stopped) stopped = true;
  };
  const streamer = {
    put(value: bigint[][]) {
      if (!promptDone) {
        promptDone = true; // the first put is the prompt itself
        return;
      }
      if (completionTokens === 0) tFirst = now();
      completionTokens++;
      lastToken = Number(value[0][0]);
      recorder?.chosen(lastToken);
      emit(detok.push(lastToken));
    },
    end() {},
  };
  const shouldStop = (ids: bigint[][]) => ids.map(() => stopped || signal.aborted);

  const processors: LogitsProcessorLike[] = [];
  const penalties = createPenaltyProcessor(promptTokens, opts);
  if (penalties) processors.push(penalties);
  processors.push(...(opts.logitsProcessors ?? []));
  const decode = {
    temperature: opts.temperature,
    topP: opts.topP,
    topK: opts.topK,
    seed: opts.seed,
    fullDistribution: opts.logprobs !== undefined,
  };
  processors.push(...(opts.processorsFor?.({ model: m, promptTokens, maxNewTokens: maxNew, decode }) ?? []));
  let recorder: ReturnType<typeof createLogprobRecorder> | undefined;
  if (opts.logprobs !== undefined) {
    const vocab = vocabOf(tok);
    const bytesOf = (id: number) => vocab.bytes[id] ?? new TextEncoder().encode(tok.decode([id]));
    recorder = createLogprobRecorder(opts.logprobs, opts.temperature ?? 1, bytesOf, eos);
    processors.push(recorder.processor);
  }
  const sampler = createSamplerProcessor(opts);
  if (sampler) processors.push(sampler);

  const batch = opts.batching === false ? undefined : batchDecoderFor(m);
  const run = async (): Promise<GenerationResult> => {
    if (maxNew > 0 && batch) {
      promptDone = true;
      const ids = Array.from((encoded.input_ids as unknown as { data: BigInt64Array }).data, Number);
      await batch.run({
        promptIds: ids,
        maxNew,
        processors,
        signal,
        onToken(token) {
          streamer.put([[BigInt(token)]]);
          return stopped || signal.aborted || eos.has(token);
        },
      });
    } else if (maxNew > 0) {
      await m.model.generate({
        ...(encoded as object),
        max_new_tokens: maxNew,
        // transformers.js' own sampling/penalties off: ours run in `processors` (seeded, OpenAI penalties)
        do_sample: false,
        repetition_penalty: 1,
        no_repeat_ngram_size: 0,
        min_length: 0,
        min_new_tokens: null,
        logits_processor: processors,
        stopping_criteria: [shouldStop],
        streamer,
      } as never);
    }
    if (signal.aborted) throw signal.reason;
    if (!stopped) {
      emit(detok.flush());
      const tail = stops.flush();
      if (tail) queue.push(tail);
    }
    const tEnd = now();
    const finishReason: FinishReason = stopped || eos.has(lastToken) ? 'stop' : 'length';
    return {
      text: stops.text,
      promptTokens,
      completionTokens,
      finishReason,
      ...(recorder ? { logprobs: recorder.all } : {}),
      ...(stopped && stops.matched !== undefined ? { stopSequence: stops.matched } : {}),
      timings: {
        loadNs,
        promptEvalNs: Math.round((completionTokens ? tFirst : tEnd) - t0),
        evalNs: completionTokens ? Math.round(tEnd - tFirst) : 0,
        totalNs: Math.round(tEnd - t0) + loadNs,
      },
    };
  };

  // An abort ends the stream at once; the session step in flight finishes on its own and is discarded.
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => {});
  const result = Promise.race([run(), aborted]);
  result.then(
    () => queue.end(),
    (e) => queue.fail(e),
  );
  return {
    result,
    prompt,
    promptTokens,
    takeLogprobs: () => recorder?.take() ?? [],
    [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
  };
}
