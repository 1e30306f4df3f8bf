/**
 * Dialect A chat completions over the chat service, free of HTTP: the request body, validated by its schema
 * (src/schemas/openai.ts), → a ChatRequest (unapplied extension fields refused by name), structured output
 * and forced tool calls enforced by constrained decoding, and the answer shaped as a chat.completion or a stream of
 * chat.completion.chunk objects.
 */
import { ServiceError } from '../errors.ts';
import { type OutputConstraint, prepareConstraint, type PreparedConstraint, type ToolSpec } from '../inference/structured/index.ts';
import type { ChatMessageIn, ChatRequest, ChatResult, ChatService, ChatStream } from './chat-service.ts';
import type { ChatBody, ChatMessageBody, CompletionBody } from '../../schemas/openai.ts';
import type { GenerationParams } from './params.ts';
import { type CallFragment, createCallFragmenter } from './call-fragments.ts';
import { forcedCall, forcedCallConstraint } from './forced-call.ts';
import type { ParsedToolCall, ToolFormat } from './tool-calls.ts';
import { randomId } from '../../ids.ts';

const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });

/** Extension fields (validated by the schema) that reach the planner unapplied: refused by name. */
export function refuseUnapplied(body: ChatBody | CompletionBody) {
  if (body.agent) throw bad('agent', `unknown agent "${body.agent}"`);
  if (body.skill) throw bad('skill', `unknown skill "${body.skill}"`);
  if (body.skill_inputs) throw bad('skill_inputs', 'given without a skill');
  for (const t of body.server_tools ?? []) throw bad('server_tools', `unknown server tool "${typeof t === 'string' ? t : t.name}"`);
  if (body.memory_store) throw bad('memory_store', `unknown memory store "${body.memory_store}"`);
  if (body.memory !== undefined && body.memory !== null && body.memory !== false) {
    throw bad('memory', 'no memory store is configured for this request (memory_store)');
  }
}

/** Sampling fields shared by chat and completions. */
export function samplingParams(body: ChatBody | CompletionBody): GenerationParams {
  const seed = body.seed ?? undefined;
  return {
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    seed: seed === undefined ? undefined : Math.floor(seed) >>> 0,
    stop: typeof body.stop === 'string' ? [body.stop] : body.stop ?? undefined,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    presencePenalty: body.presence_penalty ?? undefined,
    frequencyPenalty: body.frequency_penalty ?? undefined,
  };
}

function textOf(content: ChatMessageBody['content'], role: string, images: string[]): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  let text = '';
  for (const p of content) {
    if (p.type === 'text') text += text ? `\n${p.text}` : p.text;
    else if (p.type === 'image_url') {
      const url = typeof p.image_url === 'string' ? p.image_url : p.image_url!.url;
      const m = /^data:image\/[\w.+-]+;base64,(.*)$/s.exec(url);
      // http(s) images are refused by the model check below when it has no vision; the engine takes base64
      images.push(m ? m[1] : url);
    } else if (p.type === 'refusal' && role === 'assistant') text += typeof p.refusal === 'string' ? p.refusal : '';
  }
  return text;
}

/** OpenAI messages → the chat service's messages (developer → system, tool results named by their call). */
export function toChatMessages(input: ChatMessageBody[]): ChatMessageIn[] {
  const callNames = new Map<string, string>();
  return input.map((m) => {
    const role = m.role;
    const images: string[] = [];
    const out: ChatMessageIn = { role: role === 'developer' ? 'system' : role, content: textOf(m.content, role, images) };
    if (images.length) out.images = images;
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      out.tool_calls = m.tool_calls;
      for (const c of m.tool_calls) {
        if (c.id && c.function?.name) callNames.set(c.id, c.function.name);
      }
    }
    if (m.role === 'assistant' && typeof m.reasoning_content === 'string') out.thinking = m.reasoning_content;
    if (m.role === 'tool') out.tool_name = callNames.get(m.tool_call_id) ?? (typeof m.name === 'string' ? m.name : m.tool_call_id);
    return out;
  });
}

interface ToolsPlan {
  tools?: unknown[];
  /** Tools a forced call may use (tool_choice required or a named function). */
  forced?: ToolSpec[];
}

function planTools(body: ChatBody): ToolsPlan {
  const tools = body.tools;
  if (!tools) return {};
  const specs: ToolSpec[] = tools.map((t) => ({ name: t.function.name, parameters: t.function.parameters }));
  const choice = body.tool_choice ?? 'auto';
  if (choice === 'none') return {};
  if (choice === 'auto') return { tools };
  if (choice === 'required') return { tools, forced: specs };
  const spec = specs.find((s) => s.name === choice.function.name);
  if (!spec) throw bad('tool_choice', `names the function "${choice.function.name}", which is not among tools`);
  return { tools, forced: [spec] };
}

function responseConstraint(body: ChatBody): OutputConstraint | undefined {
  const rf = body.response_format;
  if (!rf || rf.type === 'text') return undefined;
  if (rf.type === 'json_object') return { type: 'json_object' };
  return { type: 'json_schema', schema: rf.json_schema.schema ?? {} };
}

export interface ChatPlan {
  request: ChatRequest;
  stream: boolean;
  includeUsage: boolean;
  n: number;
  /** Structured output / forced tool call: the generation is constrained and the output parsed here. */
  constraint?: PreparedConstraint;
  forcedFormat: () => ToolFormat | undefined;
}

/**
 * reasoning_effort as a thinking switch: none/minimal turn a thinking model's thinking off, low and up turn
 * it on; there is no finer budget. Models that cannot think ignore it (see docs/api/openai.md).
 */
function reasoningEffortOf(body: ChatBody): boolean | undefined {
  const e = body.reasoning_effort;
  if (e === undefined || e === null) return undefined;
  return e !== 'none' && e !== 'minimal';
}

/** Plans the generation of a validated chat completion body (semantic 400s before anything runs). */
export function planChat(body: ChatBody, signal?: AbortSignal): ChatPlan {
  if (!body.model) throw bad('model', 'required');
  refuseUnapplied(body);
  const stream = body.stream === true;
  const so = body.stream_options;
  const params = samplingParams(body);
  const n = body.n ?? 1;
  const messages = toChatMessages(body.messages ?? []);
  const { tools, forced } = planTools(body);
  const response = responseConstraint(body);
  if (response && forced) throw bad('response_format', 'cannot be combined with a forced tool call (tool_choice)');
  if ((response || forced) && params.stop?.length) {
    throw bad('stop', 'cannot be combined with structured output or a forced tool call: a stop string could cut the JSON');
  }

  let toolFormat: ToolFormat | undefined;
  let constraint: PreparedConstraint | undefined;
  const logprobs = body.logprobs === true ? body.top_logprobs ?? 0 : undefined;
  const request: ChatRequest = { model: body.model, messages, tools, params, signal, logprobs };
  const effort = reasoningEffortOf(body);
  if (effort !== undefined) request.thinkIfAble = effort;
  if (response) constraint = prepareConstraint(response);
  if (forced) {
    const forcedFor = forcedCallConstraint(forced);
    request.processorsFor = (ctx) => {
      const f = forcedFor(ctx);
      toolFormat = f.format;
      constraint = f.constraint;
      return f.constraint.processorsFor(ctx);
    };
  } else if (constraint) {
    const c = constraint;
    request.processorsFor = (ctx) => c.processorsFor(ctx);
  }
  if (response || forced) {
    request.raw = true;
    request.think = false;
  }
  return {
    request,
    stream,
    includeUsage: so?.include_usage === true,
    n,
    get constraint() {
      return constraint;
    },
    forcedFormat: () => (forced ? toolFormat : undefined),
  };
}

export const completionId = (prefix: string) => `${prefix}-${randomId(20)}`;

export const toolCallOut = (c: ParsedToolCall, index: number) => ({
  index,
  id: `call_${randomId(16)}`,
  type: 'function' as const,
  function: { name: c.name, arguments: JSON.stringify(c.arguments) },
});

export const usageOf = (r: { promptTokens: number; completionTokens: number }[]) => {
  const prompt = r[0]?.promptTokens ?? 0;
  const completion = r.reduce((a, x) => a + x.completionTokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
};

/** One finished choice: content, reasoning, calls, finish_reason. */
export function choiceOf(plan: ChatPlan, r: ChatResult, index: number) {
  let content: string | null = r.message.content;
  let calls = r.message.toolCalls;
  const format = plan.forcedFormat();
  if (format) {
    calls = [forcedCall(content, format)];
    content = null;
  }
  const finish = calls.length ? 'tool_calls' : r.finishReason;
  return {
    index,
    message: {
      role: 'assistant' as const,
      content: calls.length && !content ? null : content,
      refusal: null,
      ...(r.message.thinking ? { reasoning_content: r.message.thinking } : {}),
      ...(calls.length
        ? {
          tool_calls: calls.map((c, i) => {
            const { index: _i, ...rest } = toolCallOut(c, i);
            return rest;
          }),
        }
        : {}),
    },
    logprobs: r.logprobs ? { content: r.logprobs, refusal: null } : null,
    finish_reason: finish,
  };
}

/** Non-streaming answer: n generations one after the other (seed + i when a seed was given). */
export async function chatCompletion(chat: ChatService, plan: ChatPlan) {
  const results: ChatResult[] = [];
  const choices = [];
  for (let i = 0; i < plan.n; i++) {
    const params = {
      ...plan.request.params,
      seed: plan.request.params?.seed === undefined ? undefined : (plan.request.params.seed + i) >>> 0,
    };
    const r = await (await chat.chat({ ...plan.request, params })).complete();
    results.push(r);
    choices.push(choiceOf(plan, r, i));
  }
  return {
    id: completionId('chatcmpl'),
    object: 'chat.completion' as const,
    created: Math.floor(Date.now() / 1000),
    model: results[0].model,
    choices,
    usage: usageOf(results),
    system_fingerprint: null,
  };
}

/** Streaming answer: chat.completion.chunk objects (a usage chunk last when include_usage). */
export async function* chatChunks(s: ChatStream, plan: ChatPlan): AsyncGenerator<unknown> {
  const id = completionId('chatcmpl');
  const created = Math.floor(Date.now() / 1000);
  const usage = plan.includeUsage ? { usage: null } : {};
  const wantLogprobs = plan.request.logprobs !== undefined;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => {
    // the tokens behind this chunk's text (streamed logprobs follow the content they produced)
    const lp = wantLogprobs && delta.role === undefined ? s.takeLogprobs() : [];
    return {
      id,
      object: 'chat.completion.chunk',
      created,
      model: s.model,
      system_fingerprint: null,
      choices: [{ index: 0, delta, logprobs: lp.length ? { content: lp, refusal: null } : null, finish_reason: finish }],
      ...usage,
    };
  };
  yield chunk({ role: 'assistant', content: '' });
  const forced = plan.forcedFormat;
  let calls = 0;
  let raw = '';
  const fragment = createCallFragmenter();
  const streamed = new Set<number>();
  // calls stream as OpenAI's do: id, type and name first, then the arguments in fragments
  const fragments = (frags: (CallFragment & { index?: number })[]) =>
    chunk({
      tool_calls: frags.map((f) => {
        const index = f.index ?? 0;
        return f.name !== undefined
          ? { ...toolCallOut({ name: f.name, arguments: {} }, index), function: { name: f.name, arguments: f.arguments } }
          : { index, function: { arguments: f.arguments } };
      }),
    });
  for await (const d of s) {
    if (forced()) {
      raw += d.content;
      const frags = fragment(d.content);
      if (frags.length) yield fragments(frags);
      continue;
    }
    if (d.thinking) yield chunk({ reasoning_content: d.thinking });
    if (d.content) yield chunk({ content: d.content });
    if (d.callFragments?.length) {
      for (const f of d.callFragments) streamed.add(f.index);
      yield fragments(d.callFragments);
    }
    // a call sent in fragments is complete now; one parsed from free output is sent whole
    const whole = [];
    for (const c of d.toolCalls) {
      if (!streamed.has(calls)) whole.push(toolCallOut(c, calls));
      calls++;
    }
    if (whole.length) yield chunk({ tool_calls: whole });
  }
  const r = await s.result;
  const format = forced();
  if (format) {
    forcedCall(raw, format); // parses (constrained output): the fragments sent form its arguments
    calls++;
  }
  yield chunk({}, calls ? 'tool_calls' : r.finishReason);
  if (plan.includeUsage) {
    yield { id, object: 'chat.completion.chunk', created, model: s.model, system_fingerprint: null, choices: [], usage: usageOf([r]) };
  }
}
