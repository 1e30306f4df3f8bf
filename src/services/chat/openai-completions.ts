/**
 * Dialect A legacy completions and embeddings, free of HTTP.
 *
 * Completions: the prompt is given to the model as raw text (no chat template); a prompt array gives one
 * choice per prompt (times n); `echo` puts the prompt before the text; streaming with usage last.
 * Embeddings: one vector per input; `dimensions` truncates and renormalises (any size up to the model's
 * own); `encoding_format: base64` packs little-endian float32.
 */
import { bytesToBase64 } from '../base64.ts';
import { ServiceError } from '../errors.ts';
import type { InferenceEngine } from '../inference/engine.ts';
import type { GenerationResult } from '../inference/generate.ts';
import type { TokenLogprob } from '../inference/logprobs.ts';
import type { ChatService } from './chat-service.ts';
import type { CompletionBody, EmbeddingBody } from '../../schemas/openai.ts';
import { completionId, refuseUnapplied, samplingParams, usageOf } from './openai-chat.ts';
import { mergeParams } from './params.ts';

const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });

export interface CompletionPlan {
  model: string;
  prompts: string[];
  n: number;
  echo: boolean;
  stream: boolean;
  includeUsage: boolean;
  params: ReturnType<typeof samplingParams>;
  /** Alternatives per token (0–20) when logprobs were asked for. */
  logprobs?: number;
}

/** The legacy completions logprobs object; text offsets count from the start of the choice's text. */
function legacyLogprobs(lps: TokenLogprob[], offset: number) {
  const text_offset: number[] = [];
  let at = offset;
  for (const t of lps) {
    text_offset.push(at);
    at += t.token.length;
  }
  return {
    tokens: lps.map((t) => t.token),
    token_logprobs: lps.map((t) => t.logprob),
    top_logprobs: lps.map((t) => Object.fromEntries(t.top_logprobs.map((a) => [a.token, a.logprob]))),
    text_offset,
  };
}

/** Plans a validated completions body. */
export function planCompletion(body: CompletionBody): CompletionPlan {
  refuseUnapplied(body);
  const p = body.prompt ?? '';
  const stream = body.stream === true;
  const params = samplingParams(body);
  if (params.maxTokens === undefined) params.maxTokens = 16; // OpenAI's default for completions
  return {
    model: body.model,
    prompts: typeof p === 'string' ? [p] : p,
    n: body.n ?? 1,
    echo: body.echo === true,
    stream,
    includeUsage: stream && body.stream_options?.include_usage === true,
    params,
    logprobs: typeof body.logprobs === 'number' ? body.logprobs : undefined,
  };
}

async function generation(
  chat: ChatService,
  engine: InferenceEngine,
  plan: CompletionPlan,
  prompt: string,
  i: number,
  signal?: AbortSignal,
) {
  const m = await chat.resolve(plan.model, 'generation');
  const params = mergeParams(m.defaults, plan.params);
  if (params.seed !== undefined) params.seed = (params.seed + i) >>> 0;
  const gen = await engine.generate(m.engineSpec, { prompt }, { ...params, signal, logprobs: plan.logprobs });
  return { model: m.name, gen };
}

export async function completion(chat: ChatService, engine: InferenceEngine, plan: CompletionPlan, signal?: AbortSignal) {
  const results: GenerationResult[] = [];
  const choices = [];
  let model = plan.model;
  for (const [pi, prompt] of plan.prompts.entries()) {
    for (let k = 0; k < plan.n; k++) {
      const g = await generation(chat, engine, plan, prompt, k, signal);
      model = g.model;
      for await (const _ of g.gen) {
        /* text collected in result */
      }
      const r = await g.gen.result;
      results.push(r);
      choices.push({
        index: pi * plan.n + k,
        text: (plan.echo ? prompt : '') + r.text,
        logprobs: r.logprobs ? legacyLogprobs(r.logprobs, 0) : null,
        finish_reason: r.finishReason,
      });
    }
  }
  const usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const [pi] of plan.prompts.entries()) usage.prompt_tokens += results[pi * plan.n].promptTokens;
  usage.completion_tokens = results.reduce((a, r) => a + r.completionTokens, 0);
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  return {
    id: completionId('cmpl'),
    object: 'text_completion' as const,
    created: Math.floor(Date.now() / 1000),
    model,
    choices,
    usage,
    system_fingerprint: null,
  };
}

/** Starts the streamed completion (throws before anything streams) and returns its chunks. */
export async function completionChunks(
  chat: ChatService,
  engine: InferenceEngine,
  plan: CompletionPlan,
  signal?: AbortSignal,
): Promise<AsyncGenerator<unknown>> {
  const { model, gen } = await generation(chat, engine, plan, plan.prompts[0], 0, signal);
  const id = completionId('cmpl');
  const created = Math.floor(Date.now() / 1000);
  let offset = 0;
  const chunk = (text: string, finish: string | null = null) => {
    const lps = plan.logprobs !== undefined ? gen.takeLogprobs() : [];
    const logprobs = lps.length ? legacyLogprobs(lps, offset) : null;
    offset += text.length;
    return {
      id,
      object: 'text_completion',
      created,
      model,
      system_fingerprint: null,
      choices: [{ index: 0, text, logprobs, finish_reason: finish }],
      ...(plan.includeUsage ? { usage: null } : {}),
    };
  };
  return (async function* () {
    if (plan.echo) yield chunk(plan.prompts[0]);
    for await (const t of gen) yield chunk(t);
    const r = await gen.result;
    yield chunk('', r.finishReason);
    if (plan.includeUsage) {
      yield { id, object: 'text_completion', created, model, system_fingerprint: null, choices: [], usage: usageOf([r]) };
    }
  })();
}

export interface EmbeddingPlan {
  model: string;
  inputs: string[];
  base64: boolean;
  dimensions?: number;
}

export function planEmbeddings(body: EmbeddingBody): EmbeddingPlan {
  return {
    model: body.model,
    inputs: typeof body.input === 'string' ? [body.input] : body.input,
    base64: body.encoding_format === 'base64',
    dimensions: body.dimensions ?? undefined,
  };
}

/** The first `dims` components, renormalised to unit length (Matryoshka-style truncation). */
export function truncateEmbedding(vec: number[], dims: number): number[] {
  return shape(vec, dims);
}

function shape(vec: number[], dims: number | undefined): number[] {
  if (dims === undefined || dims === vec.length) return vec;
  if (dims > vec.length) throw bad('dimensions', `the model's embeddings have ${vec.length} dimensions; ${dims} is more`);
  const cut = vec.slice(0, dims);
  const norm = Math.hypot(...cut) || 1;
  return cut.map((x) => x / norm);
}

function toBase64(vec: number[]): string {
  const view = new DataView(new ArrayBuffer(vec.length * 4));
  vec.forEach((x, i) => view.setFloat32(i * 4, x, true));
  return bytesToBase64(new Uint8Array(view.buffer));
}

export async function embeddings(chat: ChatService, plan: EmbeddingPlan, signal?: AbortSignal) {
  const r = await chat.embed(plan.model, plan.inputs, { signal });
  return {
    object: 'list' as const,
    data: r.vectors.map((v, index) => {
      const vec = shape(v, plan.dimensions);
      return { object: 'embedding' as const, index, embedding: plan.base64 ? toBase64(vec) : vec };
    }),
    model: r.model,
    usage: { prompt_tokens: r.promptTokens, total_tokens: r.promptTokens },
  };
}
