/**
 * Dialect A chat completions over the chat service, free of HTTP: the request body → a ChatRequest (fields
 * we do not serve refused by name, extension fields validated), structured output and forced tool calls
 * enforced by constrained decoding, and the answer shaped as a chat.completion or a stream of
 * chat.completion.chunk objects.
 */
import { randomBytes } from 'node:crypto';
import { ServiceError } from '../errors.ts';
import { type OutputConstraint, prepareConstraint, type PreparedConstraint, type ToolSpec } from '../inference/structured/index.ts';
import type { ChatMessageIn, ChatRequest, ChatResult, ChatService, ChatStream } from './chat-service.ts';
import type { GenerationParams } from './params.ts';
import { createCallFragmenter } from './call-fragments.ts';
import { type ParsedToolCall, type ToolFormat, toolFormatOf, toToolCall } from './tool-calls.ts';

type Body = Record<string, unknown>;

const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });

/** Fields of the OpenAI request this server does not serve: refused by name, never ignored. */
export const REFUSED_CHAT_FIELDS: Record<string, (v: unknown) => boolean> = {
  logit_bias: (v) => !!v && typeof v === 'object' && Object.keys(v).length > 0,
  audio: (v) => v !== undefined && v !== null,
  modalities: (v) => Array.isArray(v) && v.some((m) => m !== 'text'),
  prediction: (v) => v !== undefined && v !== null,
  web_search_options: (v) => v !== undefined && v !== null,
  functions: (v) => v !== undefined && v !== null,
  function_call: (v) => v !== undefined && v !== null,
  store: (v) => v === true,
  verbosity: (v) => v !== undefined && v !== null,
  service_tier: (v) => v !== undefined && v !== null && v !== 'auto' && v !== 'default',
};

export function refuseFields(body: Body, refused: Record<string, (v: unknown) => boolean>, what: string) {
  for (const [k, used] of Object.entries(refused)) {
    if (k in body && used(body[k])) throw bad(k, `not supported by this server's ${what}`);
  }
}

/** Extension fields that reach the planner unapplied (agents, skills, server tools and memory are applied by the route first): refused by name. */
export function checkExtensions(body: Body) {
  const str = (k: string) => {
    const v = body[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || !v) throw bad(k, 'must be a non-empty string');
    return v;
  };
  const agent = str('agent');
  if (agent) throw bad('agent', `unknown agent "${agent}"`);
  const skill = str('skill');
  if (skill) throw bad('skill', `unknown skill "${skill}"`);
  if (body.skill_inputs !== undefined && body.skill_inputs !== null) {
    if (typeof body.skill_inputs !== 'object' || Array.isArray(body.skill_inputs)) throw bad('skill_inputs', 'must be an object');
    throw bad('skill_inputs', 'given without a skill');
  }
  if (body.server_tools !== undefined && body.server_tools !== null) {
    if (!Array.isArray(body.server_tools)) throw bad('server_tools', 'must be an array of server tool names');
    for (const t of body.server_tools) {
      const name = typeof t === 'string' ? t : (t as { name?: unknown })?.name;
      if (typeof name !== 'string') throw bad('server_tools', 'each entry must be a name (or an object with a name)');
      throw bad('server_tools', `unknown server tool "${name}"`);
    }
  }
  const store = str('memory_store');
  if (store) throw bad('memory_store', `unknown memory store "${store}"`);
  if (body.memory !== undefined && body.memory !== null && body.memory !== false) {
    if (typeof body.memory !== 'boolean' && (typeof body.memory !== 'object' || Array.isArray(body.memory))) {
      throw bad('memory', 'must be a boolean or an object');
    }
    throw bad('memory', 'no memory store is configured for this request (memory_store)');
  }
}

const num = (body: Body, k: string, lo: number, hi: number): number | undefined => {
  const v = body[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi) throw bad(k, `must be a number from ${lo} to ${hi}`);
  return v;
};

/** Sampling fields shared by chat and completions. */
export function samplingParams(body: Body): GenerationParams {
  const maxTokens = num(body, 'max_completion_tokens', 1, 1 << 24) ?? num(body, 'max_tokens', 1, 1 << 24);
  if (maxTokens !== undefined && !Number.isInteger(maxTokens)) throw bad('max_tokens', 'must be an integer');
  let stop: string[] | undefined;
  if (body.stop !== undefined && body.stop !== null) {
    stop = typeof body.stop === 'string'
      ? [body.stop]
      : Array.isArray(body.stop) && body.stop.every((s) => typeof s === 'string')
      ? (body.stop as string[])
      : undefined;
    if (!stop || stop.length > 4) throw bad('stop', 'must be a string or an array of up to 4 strings');
  }
  const seed = num(body, 'seed', -(2 ** 63), 2 ** 64);
  return {
    temperature: num(body, 'temperature', 0, 2),
    topP: num(body, 'top_p', 0, 1),
    seed: seed === undefined ? undefined : Math.floor(seed) >>> 0,
    stop,
    maxTokens,
    presencePenalty: num(body, 'presence_penalty', -2, 2),
    frequencyPenalty: num(body, 'frequency_penalty', -2, 2),
  };
}

export function choicesCount(body: Body, stream: boolean): number {
  const n = num(body, 'n', 1, 16) ?? 1;
  if (!Number.isInteger(n)) throw bad('n', 'must be an integer');
  if (n > 1 && stream) throw bad('n', 'n > 1 is not supported with stream (ask for one streamed choice per request)');
  return n;
}

function textOf(content: unknown, role: string, images: string[]): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad('messages', `${role} content must be a string or an array of parts`);
  let text = '';
  for (const p of content as { type?: string; text?: unknown; image_url?: { url?: unknown } | string; refusal?: unknown }[]) {
    if (p?.type === 'text' && typeof p.text === 'string') text += text ? `\n${p.text}` : p.text;
    else if (p?.type === 'image_url' && role === 'user') {
      const url = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
      if (typeof url !== 'string') throw bad('messages', 'image_url.url must be a string');
      const m = /^data:image\/[\w.+-]+;base64,(.*)$/s.exec(url);
      // http(s) images are refused by the model check below when it has no vision; the engine takes base64
      images.push(m ? m[1] : url);
    } else if (p?.type === 'refusal' && role === 'assistant') text += typeof p.refusal === 'string' ? p.refusal : '';
    else throw bad('messages', `content part type "${p?.type}" is not supported in a ${role} message`);
  }
  return text;
}

/** OpenAI messages → the chat service's messages (developer → system, tool results named by their call). */
export function toChatMessages(input: unknown): ChatMessageIn[] {
  if (!Array.isArray(input) || input.length === 0) throw bad('messages', 'must be a non-empty array');
  const callNames = new Map<string, string>();
  return input.map((raw, i) => {
    const m = raw as Record<string, unknown>;
    const role = m?.role;
    if (typeof role !== 'string' || !['system', 'developer', 'user', 'assistant', 'tool'].includes(role)) {
      throw bad(`messages.${i}.role`, `must be one of system, developer, user, assistant, tool`);
    }
    const images: string[] = [];
    const out: ChatMessageIn = { role: role === 'developer' ? 'system' : role, content: textOf(m.content, role, images) };
    if (images.length) out.images = images;
    if (role === 'assistant' && Array.isArray(m.tool_calls)) {
      out.tool_calls = m.tool_calls;
      for (const c of m.tool_calls as { id?: string; function?: { name?: string } }[]) {
        if (c?.id && c.function?.name) callNames.set(c.id, c.function.name);
      }
    }
    if (role === 'assistant' && typeof m.reasoning_content === 'string') out.thinking = m.reasoning_content;
    if (role === 'tool') {
      const id = m.tool_call_id;
      if (typeof id !== 'string') throw bad(`messages.${i}.tool_call_id`, 'required for a tool message');
      out.tool_name = callNames.get(id) ?? (typeof m.name === 'string' ? m.name : id);
    }
    return out;
  });
}

interface ToolsPlan {
  tools?: unknown[];
  /** Tools a forced call may use (tool_choice required or a named function). */
  forced?: ToolSpec[];
}

function planTools(body: Body): ToolsPlan {
  const tools = body.tools;
  if (tools === undefined || tools === null) {
    if (body.tool_choice !== undefined && body.tool_choice !== null && body.tool_choice !== 'none' && body.tool_choice !== 'auto') {
      throw bad('tool_choice', 'given without tools');
    }
    return {};
  }
  if (!Array.isArray(tools)) throw bad('tools', 'must be an array');
  const specs: ToolSpec[] = tools.map((t, i) => {
    const fn = (t as { type?: string; function?: { name?: unknown; parameters?: unknown } })?.function;
    if ((t as { type?: string })?.type !== 'function' || !fn || typeof fn.name !== 'string' || !fn.name) {
      throw bad(`tools.${i}`, 'only {"type":"function","function":{"name",...}} tools are supported');
    }
    return { name: fn.name, parameters: fn.parameters };
  });
  const choice = body.tool_choice ?? 'auto';
  if (choice === 'none') return {};
  if (choice === 'auto') return { tools };
  if (choice === 'required') return { tools, forced: specs };
  const name = (choice as { type?: string; function?: { name?: unknown } })?.function?.name;
  if ((choice as { type?: string })?.type !== 'function' || typeof name !== 'string') {
    throw bad('tool_choice', 'must be "none", "auto", "required" or {"type":"function","function":{"name":...}}');
  }
  const spec = specs.find((s) => s.name === name);
  if (!spec) throw bad('tool_choice', `names the function "${name}", which is not among tools`);
  return { tools, forced: [spec] };
}

function responseConstraint(body: Body): OutputConstraint | undefined {
  const rf = body.response_format as { type?: string; json_schema?: { schema?: unknown; name?: unknown } } | undefined | null;
  if (rf === undefined || rf === null || rf.type === 'text') return undefined;
  if (rf.type === 'json_object') return { type: 'json_object' };
  if (rf.type === 'json_schema') {
    if (!rf.json_schema || typeof rf.json_schema !== 'object') throw bad('response_format.json_schema', 'required for type json_schema');
    return { type: 'json_schema', schema: rf.json_schema.schema ?? {} };
  }
  throw bad('response_format.type', `"${rf.type}" is not one of text, json_object, json_schema`);
}

/** logprobs / top_logprobs (0–20, only with logprobs: true) → alternatives per token, or undefined. */
function logprobsOf(body: Body): number | undefined {
  const top = num(body, 'top_logprobs', 0, 20);
  if (top !== undefined && !Number.isInteger(top)) throw bad('top_logprobs', 'must be an integer from 0 to 20');
  if (body.logprobs !== undefined && body.logprobs !== null && typeof body.logprobs !== 'boolean') {
    throw bad('logprobs', 'must be a boolean');
  }
  if (body.logprobs !== true) {
    if (top !== undefined) throw bad('top_logprobs', 'requires logprobs: true');
    return undefined;
  }
  return top ?? 0;
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

const EFFORTS_OFF = ['none', 'minimal'];
const EFFORTS_ON = ['low', 'medium', 'high', 'xhigh'];

/**
 * reasoning_effort as a thinking switch: none/minimal turn a thinking model's thinking off, low and up turn
 * it on; there is no finer budget. Models that cannot think ignore it (see docs/api/openai.md).
 */
function reasoningEffortOf(body: Body): boolean | undefined {
  const e = body.reasoning_effort;
  if (e === undefined || e === null) return undefined;
  if (typeof e === 'string' && EFFORTS_OFF.includes(e)) return false;
  if (typeof e === 'string' && EFFORTS_ON.includes(e)) return true;
  throw bad('reasoning_effort', `must be one of ${[...EFFORTS_OFF, ...EFFORTS_ON].join(', ')}`);
}

/** Validates a chat completion body and plans the generation (throws 400s before anything runs). */
export function planChat(body: Body, signal?: AbortSignal): ChatPlan {
  if (typeof body.model !== 'string' || !body.model) throw bad('model', 'required');
  refuseFields(body, REFUSED_CHAT_FIELDS, 'chat completions');
  checkExtensions(body);
  const stream = body.stream === true;
  const so = body.stream_options as { include_usage?: unknown } | undefined | null;
  if (so !== undefined && so !== null && !stream) throw bad('stream_options', 'only allowed with stream: true');
  const params = samplingParams(body);
  const n = choicesCount(body, stream);
  const messages = toChatMessages(body.messages);
  const { tools, forced } = planTools(body);
  const response = responseConstraint(body);
  if (response && forced) throw bad('response_format', 'cannot be combined with a forced tool call (tool_choice)');
  if ((response || forced) && params.stop?.length) {
    throw bad('stop', 'cannot be combined with structured output or a forced tool call: a stop string could cut the JSON');
  }

  let toolFormat: ToolFormat | undefined;
  let constraint: PreparedConstraint | undefined;
  const request: ChatRequest = { model: body.model, messages, tools, params, signal, logprobs: logprobsOf(body) };
  const effort = reasoningEffortOf(body);
  if (effort !== undefined) request.thinkIfAble = effort;
  if (response) constraint = prepareConstraint(response);
  if (forced) {
    // The grammar follows the model's own tool-call form, known once the model is loaded.
    const byFormat = new Map<ToolFormat, PreparedConstraint>();
    request.processorsFor = (ctx) => {
      const tpl = ctx.model.tokenizer.chat_template;
      toolFormat = toolFormatOf(typeof tpl === 'string' ? tpl : JSON.stringify(tpl ?? ''));
      let c = byFormat.get(toolFormat);
      if (!c) byFormat.set(toolFormat, c = prepareConstraint({ type: 'tool_call', format: toolFormat, tools: forced }));
      constraint = c;
      return c.processorsFor(ctx);
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

/** The text of a forced call (constrained, so it parses): `<tool_call>\n{...}\n</tool_call>` or bare JSON. */
export function forcedCall(text: string, format: ToolFormat): ParsedToolCall {
  const json = format === 'hermes' ? text.trim().replace(/^<tool_call>/, '').replace(/<\/tool_call>$/, '') : text;
  const call = toToolCall(JSON.parse(json));
  if (!call) throw new Error('constrained tool call did not parse');
  return call;
}

export const completionId = (prefix: string) => `${prefix}-${randomBytes(12).toString('base64url')}`;

export const toolCallOut = (c: ParsedToolCall, index: number) => ({
  index,
  id: `call_${randomBytes(9).toString('base64url')}`,
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
  for await (const d of s) {
    if (forced()) {
      // a forced call streams as OpenAI's do: id and name first, then the arguments in fragments
      raw += d.content;
      const frags = fragment(d.content);
      if (frags.length) {
        yield chunk({
          tool_calls: frags.map((
            f,
          ) => (f.name !== undefined
            ? { ...toolCallOut({ name: f.name, arguments: {} }, 0), function: { name: f.name, arguments: f.arguments } }
            : { index: 0, function: { arguments: f.arguments } })
          ),
        });
      }
      continue;
    }
    if (d.thinking) yield chunk({ reasoning_content: d.thinking });
    if (d.content) yield chunk({ content: d.content });
    if (d.toolCalls.length) yield chunk({ tool_calls: d.toolCalls.map((c) => toolCallOut(c, calls++)) });
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
