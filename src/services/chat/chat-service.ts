/**
 * Chat for every dialect, free of HTTP: name → model (downloaded on demand) → a generation rendered with
 * the model's own chat template (or a custom model's), the custom model's system prompt and parameters
 * applied, and the output split into content, thinking and tool calls as it streams.
 */
import { checkJsonDepth } from '../limits.ts';
import { join } from 'node:path';
import { invalidArgument, ServiceError } from '../errors.ts';
import type { InferenceEngine } from '../inference/engine.ts';
import type { GenerateOptions, GenerationResult, ProcessorContext } from '../inference/generate.ts';
import type { ModelSpec as EngineSpec } from '../inference/residency.ts';
import { parseKeepAlive } from '../inference/keep-alive.ts';
import type { LogitsProcessorLike } from '../inference/sampling.ts';
import type { ChatMessage } from '../inference/chat-prompt.ts';
import type { ModelServices } from '../models/model-services.ts';
import { deriveCapabilities, ownChatTemplate, readJsonFile } from '../models/show.ts';
import type { Capability, CustomModelRecord, ModelKind, ModelSpec } from '../models/spec.ts';
import { createOutputParser, emptyDelta, isEmptyDelta, type OutputDelta } from './output-parser.ts';
import { fromGenerationConfig, fromOllamaOptions, type GenerationParams, mergeParams } from './params.ts';
import { ResolvedModelMemo } from './resolved-models.ts';
import { type ChatImage, loadChatImages } from './chat-images.ts';
import { type ParsedToolCall, type ToolFormat, toolFormatOf } from './tool-calls.ts';
import { prepareAutoToolCalls, type ToolSpec } from '../inference/structured/index.ts';

export interface ChatMessageIn {
  role: string;
  content?: string | null;
  /** Base64 images (refused unless the model has vision). */
  images?: string[];
  /** Earlier assistant turns' calls: `{function: {name, arguments}}` (arguments an object or JSON text). */
  tool_calls?: unknown[];
  /** Earlier assistant turns' reasoning (given to the template as `reasoning_content` too). */
  thinking?: string;
  /** Tool results: the tool's name. */
  tool_name?: string;
  [key: string]: unknown;
}

/** Name and parameters of each tool in a request (OpenAI's `{type, function: {...}}` or the bare function). */
function toolSpecs(tools: unknown[]): ToolSpec[] {
  return tools.map((t) => {
    const o = t as { function?: { name?: unknown; parameters?: unknown }; name?: unknown; parameters?: unknown };
    const fn = o?.function ?? o;
    return { name: typeof fn?.name === 'string' ? fn.name : '', parameters: fn?.parameters };
  });
}

/** `format`: "json" or a JSON schema object. */
export type OutputFormat = 'json' | Record<string, unknown>;

/** Builds the processors that keep the output inside `format` (the structured-output module). */
export type FormatConstraint = (
  format: OutputFormat,
  ctx: ProcessorContext,
) => LogitsProcessorLike[];

export interface ChatRequest {
  model: string;
  messages: ChatMessageIn[];
  tools?: unknown[];
  /** true/false switch the template's thinking; undefined = the template's default. */
  think?: boolean;
  /** A thinking preference that applies only where the model can think (ignored by other models); `think` wins. */
  thinkIfAble?: boolean;
  format?: OutputFormat;
  /** Request parameters (override the custom model's and the model's defaults). */
  params?: GenerationParams;
  keepAlive?: unknown;
  signal?: AbortSignal;
  /** Extra processors passed straight to the engine. */
  logitsProcessors?: LogitsProcessorLike[];
  /** Template variables beyond tools and thinking. */
  templateKwargs?: Record<string, unknown>;
  /** Processors built once the model and budget are known (used when `format` is absent: forced tool calls). */
  processorsFor?: GenerateOptions['processorsFor'];
  /** Calls the model makes on its own stay unconstrained (parsed from free output, sent whole). */
  freeCalls?: boolean;
  /** No thinking/tool-call parsing: every output character is content (constrained output parsed by the caller). */
  raw?: boolean;
  /** Record token log-probabilities with this many alternatives (0–20). */
  logprobs?: number;
}

export interface ChatResult {
  model: string;
  message: { content: string; thinking: string; toolCalls: ParsedToolCall[] };
  finishReason: GenerationResult['finishReason'];
  /** The stop string that ended the output, when one did. */
  stopSequence?: string;
  promptTokens: number;
  completionTokens: number;
  timings: GenerationResult['timings'];
  logprobs?: GenerationResult['logprobs'];
}

export interface ChatStream extends AsyncIterable<OutputDelta> {
  /** The model's display name. */
  model: string;
  /** The rendered prompt. */
  prompt: string;
  /** Tokens of the rendered prompt (known before the first output token). */
  promptTokens: number;
  /** Settles once the stream has been read to its end (or failed / was cancelled). */
  result: Promise<ChatResult>;
  /** Reads the whole stream and returns the result (non-streaming answers). */
  complete(): Promise<ChatResult>;
  /** Token log-probabilities generated since the last call (when asked for). */
  takeLogprobs(): NonNullable<GenerationResult['logprobs']>;
}

export interface ResolvedChatModel {
  name: string;
  spec: ModelSpec;
  engineSpec: EngineSpec;
  capabilities: Capability[];
  template: string;
  profile?: CustomModelRecord['profile'];
  defaults: GenerationParams;
}

const TASK: Record<ModelKind, EngineSpec['task'] | undefined> = {
  generation: 'text-generation',
  embedding: 'feature-extraction',
  reranker: 'text-classification',
  speech: 'automatic-speech-recognition',
  classifier: undefined,
};

const KIND_WORD: Record<ModelKind, string> = {
  generation: 'generate',
  embedding: 'embed',
  reranker: 'rerank',
  speech: 'transcribe',
  classifier: 'classify',
};

export class ChatService {
  readonly #models: ModelServices;
  readonly #engine: InferenceEngine;
  readonly #constrain?: FormatConstraint;
  readonly #resolved: ResolvedModelMemo<ResolvedChatModel>;
  readonly #imageHosts: readonly string[];

  /** `imageHosts`: hosts an image URL in a chat may name (the image egress policy); none by default. */
  constructor(o: { models: ModelServices; engine: InferenceEngine; constrain?: FormatConstraint; imageHosts?: readonly string[] }) {
    this.#models = o.models;
    this.#engine = o.engine;
    this.#constrain = o.constrain;
    this.#imageHosts = o.imageHosts ?? [];
    this.#resolved = new ResolvedModelMemo((name) => this.#models.pulls.localStamp(name), (name, kind) => this.#resolveFresh(name, kind));
  }

  /**
   * Name → local model of the wanted kind (downloaded first when absent). 404 unknown, 400 wrong kind.
   * Remembered per name until the model changes on disk (see resolved-models.ts); the result is shared.
   */
  resolve(name: string, kind: ModelKind): Promise<ResolvedChatModel> {
    return this.#resolved.get(name, kind);
  }

  async #resolveFresh(name: string, kind: ModelKind): Promise<ResolvedChatModel> {
    const { spec, local } = await this.#models.pulls.ensure(name);
    if (spec.kind !== kind) {
      throw invalidArgument(
        `"${spec.name}" does not support ${
          kind === 'generation' ? 'chat or generate' : KIND_WORD[kind] === 'embed' ? 'embeddings' : KIND_WORD[kind]
        }`,
      );
    }
    const task = TASK[kind];
    if (!task) throw new ServiceError(501, 'not_implemented', `${kind} models are not served by this route`);
    const profile = (spec as Partial<CustomModelRecord>).profile;
    const config = await readJsonFile(join(local.dir, 'config.json'));
    const template = profile?.template ?? (kind === 'generation' ? await ownChatTemplate(local.dir) : '');
    const generationConfig = kind === 'generation' ? await readJsonFile(join(local.dir, 'generation_config.json')) : undefined;
    return {
      name: spec.name,
      spec,
      engineSpec: { name: spec.name, dir: local.dir, task, dtype: spec.dtype },
      capabilities: deriveCapabilities(spec.kind, config, template, spec.capabilities),
      template,
      profile,
      defaults: mergeParams(fromGenerationConfig(generationConfig), fromOllamaOptions(profile?.parameters, 'parameters')),
    };
  }

  /**
   * Empty chat / generate: load the model, or with keep_alive 0 unload it (without downloading anything).
   * Returns what happened: Ollama's done_reason `load` or `unload`.
   */
  async preload(name: string, keepAlive?: unknown): Promise<{ model: string; action: 'load' | 'unload' }> {
    if (keepAlive !== undefined && parseKeepAlive(keepAlive, 0) === 0) {
      const { spec } = await this.#models.pulls.resolve(name);
      await this.#engine.unload(spec.name);
      return { model: spec.name, action: 'unload' };
    }
    const m = await this.resolve(name, (await this.#models.pulls.resolve(name)).spec.kind);
    await this.#engine.preload(m.engineSpec, keepAlive);
    return { model: m.name, action: 'load' };
  }

  /** The model of a chat request, checked against what the request needs (images, tools, thinking). */
  async #chatModel(req: ChatRequest): Promise<ResolvedChatModel> {
    const m = await this.resolve(req.model, 'generation');
    const has = (c: Capability) => m.capabilities.includes(c);
    if (req.messages.some((x) => x.images?.length) && !has('vision')) {
      throw invalidArgument(`"${m.name}" does not support images (no vision capability)`);
    }
    if (req.tools?.length && !has('tools')) throw invalidArgument(`"${m.name}" does not support tools`);
    if (req.think === undefined && req.thinkIfAble !== undefined && has('thinking')) req.think = req.thinkIfAble;
    if (req.think === true && !has('thinking')) throw invalidArgument(`"${m.name}" does not support thinking`);
    // a hostile schema nested thousands deep is refused before any compiler or template walks it
    if (req.format !== undefined && req.format !== 'json') checkJsonDepth(req.format, 'format');
    if (req.tools?.length) checkJsonDepth(req.tools, 'tools');
    return m;
  }

  /** Tokens the request's prompt takes, rendered exactly as chat() renders it; nothing is generated. */
  async countTokens(req: ChatRequest): Promise<{ model: string; promptTokens: number }> {
    const m = await this.#chatModel(req);
    const promptTokens = await this.#engine.countTokens(m.engineSpec, {
      ...(await this.#visionInput(m, req)),
      tools: req.tools?.length ? req.tools : undefined,
      enableThinking: req.think,
      templateKwargs: { ...req.templateKwargs, ...templateOverride(m) },
    }, { keepAlive: req.keepAlive, signal: req.signal });
    return { model: m.name, promptTokens };
  }

  /** Starts a chat generation; throws (before anything streams) for bad requests, unknown models, busy slots. */
  async chat(req: ChatRequest): Promise<ChatStream> {
    const m = await this.#chatModel(req);
    const has = (c: Capability) => m.capabilities.includes(c);
    if (req.format !== undefined && !this.#constrain) {
      throw new ServiceError(501, 'not_implemented', 'structured output (format) is not available in this build');
    }

    const { messages, images } = await this.#visionInput(m, req);
    const params = mergeParams(m.defaults, req.params);
    const format = req.format;
    const constrain = this.#constrain;
    const signal = req.signal;
    const toolFormat: ToolFormat | undefined = req.tools?.length ? toolFormatOf(m.template) : undefined;
    // calls the model chooses to make are constrained once it starts one (then streamed in fragments)
    const auto = toolFormat && !req.raw && !req.freeCalls && format === undefined && !req.processorsFor && constrain
      ? prepareAutoToolCalls(toolFormat, toolSpecs(req.tools!))
      : undefined;
    let callsConstrained = false;
    const gen = await this.#engine.generate(
      m.engineSpec,
      {
        messages,
        images,
        tools: req.tools?.length ? req.tools : undefined,
        enableThinking: req.think,
        templateKwargs: { ...req.templateKwargs, ...templateOverride(m) },
      },
      {
        ...params,
        keepAlive: req.keepAlive,
        signal,
        logitsProcessors: req.logitsProcessors,
        logprobs: req.logprobs,
        processorsFor: format !== undefined && constrain ? (ctx) => constrain(format, ctx) : auto
          ? (ctx) => {
            const ps = auto.processorsFor(ctx);
            callsConstrained = ps.length > 0;
            return ps;
          }
          : req.processorsFor,
      },
    );

    const thinking = has('thinking') || /<think>/.test(m.template);
    // constrained output (format) is JSON from its first character: nothing in it is thinking or a call
    const parser = req.raw || format !== undefined
      ? { push: (text: string): OutputDelta => ({ ...emptyDelta(), content: text }), flush: emptyDelta }
      : createOutputParser({
        thinking,
        startInThinking: thinking && opensThinking(gen.prompt),
        tools: toolFormat,
        // a stop string could cut a call after its first fragments were sent
        streamCalls: callsConstrained && !params.stop?.length,
      });
    return chatStream(m.name, gen, parser);
  }

  /**
   * The messages as the template reads them and, for a vision model, the request's images decoded in the
   * order of their placeholders (each message's images before its text, as Ollama places them).
   */
  async #visionInput(m: ResolvedChatModel, req: ChatRequest): Promise<{ messages: ChatMessage[]; images?: ChatImage[] }> {
    const messages = templateMessages(req.messages, m.profile?.system);
    if (!m.capabilities.includes('vision')) return { messages };
    const refs = req.messages.flatMap((x) => x.images ?? []);
    const images = refs.length ? await loadChatImages(refs, { allowedHosts: this.#imageHosts, signal: req.signal }) : undefined;
    // a custom system prompt comes first without images; every other message lines up with its request message
    const offset = messages.length - req.messages.length;
    return {
      messages: messages.map((msg, i) => ({
        ...msg,
        content: [
          ...(req.messages[i - offset]?.images ?? []).map(() => ({ type: 'image' })),
          { type: 'text', text: typeof msg.content === 'string' ? msg.content : '' },
        ] as never,
      })),
      images,
    };
  }

  /** Embeddings, one vector per input (over-long inputs chunked and mean-pooled); [] preloads. */
  async embed(name: string, inputs: string[], o: { keepAlive?: unknown; signal?: AbortSignal } = {}) {
    const m = await this.resolve(name, 'embedding');
    const t0 = performance.now();
    if (inputs.length === 0) {
      const { loadNs } = await this.#engine.residency.preload(
        m.engineSpec,
        o.keepAlive === undefined ? undefined : parseKeepAlive(o.keepAlive, 0),
      );
      return { model: m.name, vectors: [] as number[][], promptTokens: 0, loadNs, totalNs: Math.round((performance.now() - t0) * 1e6) };
    }
    const r = await this.#engine.embed(m.engineSpec, inputs, { keepAlive: o.keepAlive, signal: o.signal });
    return {
      model: m.name,
      vectors: r.vectors,
      promptTokens: r.tokens.reduce((a, b) => a + b, 0),
      loadNs: r.loadNs,
      totalNs: Math.round((performance.now() - t0) * 1e6),
    };
  }
}

/** The prompt ends inside an open `<think>` block (the template opened it for the model). */
export function opensThinking(prompt: string): boolean {
  return prompt.lastIndexOf('<think>') > prompt.lastIndexOf('</think>');
}

/**
 * Messages as chat templates read them: a custom model's system prompt first unless the request brings
 * one, `thinking` also as `reasoning_content`, tool results named, call arguments as objects.
 */
export function templateMessages(messages: ChatMessageIn[], system?: string): ChatMessage[] {
  const out = messages.map((msg) => {
    const { images: _images, thinking, tool_name, tool_calls, ...rest } = msg;
    const m: ChatMessage = { ...rest, content: msg.content ?? '' };
    if (thinking) (m.thinking = thinking), (m.reasoning_content = thinking);
    if (tool_name) (m.tool_name = tool_name), (m.name ??= tool_name);
    if (tool_calls?.length) m.tool_calls = tool_calls.map(normaliseCall);
    return m;
  });
  if (system && !messages.some((x) => x.role === 'system')) out.unshift({ role: 'system', content: system });
  return out;
}

function normaliseCall(c: unknown): unknown {
  const fn = (c as { function?: { name?: unknown; arguments?: unknown } })?.function;
  if (!fn || typeof fn !== 'object') return c;
  let args = fn.arguments;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      /* left as text: the template prints it as is */
    }
  }
  return { ...(c as object), type: 'function', function: { ...fn, arguments: args ?? {} } };
}

function chatStream(
  model: string,
  gen: Awaited<ReturnType<InferenceEngine['generate']>>,
  parser: ReturnType<typeof createOutputParser>,
): ChatStream {
  let settle!: { resolve: (r: ChatResult) => void; reject: (e: unknown) => void };
  const result = new Promise<ChatResult>((resolve, reject) => (settle = { resolve, reject }));
  result.catch(() => {});
  const acc = emptyDelta();
  const add = (d: OutputDelta) => {
    acc.content += d.content;
    acc.thinking += d.thinking;
    acc.toolCalls.push(...d.toolCalls);
  };
  let started = false;

  async function* run(): AsyncGenerator<OutputDelta> {
    if (started) throw new Error('a chat stream can be read once');
    started = true;
    let finished = false;
    try {
      for await (const text of gen) {
        const d = parser.push(text);
        add(d);
        if (!isEmptyDelta(d)) yield d;
      }
      const r = await gen.result;
      const tail = parser.flush();
      add(tail);
      if (!isEmptyDelta(tail)) yield tail;
      finished = true;
      settle.resolve({
        model,
        message: { content: acc.content, thinking: acc.thinking, toolCalls: acc.toolCalls },
        finishReason: r.finishReason,
        ...(r.stopSequence !== undefined ? { stopSequence: r.stopSequence } : {}),
        promptTokens: r.promptTokens,
        completionTokens: r.completionTokens,
        timings: r.timings,
        ...(r.logprobs ? { logprobs: r.logprobs } : {}),
      });
    } catch (e) {
      finished = true;
      settle.reject(e);
      throw e;
    } finally {
      // the reader stopped early (client gone): the engine's stream closes with the loop, which aborts it
      if (!finished) settle.reject(new DOMException('chat stream closed before the end', 'AbortError'));
    }
  }

  const stream: ChatStream = {
    model,
    prompt: gen.prompt,
    promptTokens: gen.promptTokens,
    result,
    takeLogprobs: () => gen.takeLogprobs(),
    [Symbol.asyncIterator]: () => run(),
    async complete() {
      for await (const _ of stream) {
        /* accumulated in result */
      }
      return result;
    },
  };
  return stream;
}

/**
 * The template to render with instead of the tokenizer's own: a custom model's, or a vision model's that
 * lives only in chat_template.json (where processors keep it), which the tokenizer does not read.
 */
function templateOverride(m: ResolvedChatModel): { chat_template?: string } {
  if (m.profile?.template) return { chat_template: m.profile.template };
  return m.capabilities.includes('vision') && m.template ? { chat_template: m.template } : {};
}
