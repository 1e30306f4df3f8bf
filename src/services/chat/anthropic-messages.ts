/**
 * The Anthropic Messages API over the chat service, free of HTTP: a request body → a ChatRequest (fields
 * and block types we do not serve refused by name), forced tool use (`tool_choice` any / tool) enforced by
 * constrained decoding, and the answer shaped as a `message` or as the stream's typed events
 * (message_start, content_block_start/delta/stop, message_delta, message_stop). See docs/api/anthropic.md.
 */
import { randomBytes } from 'node:crypto';
import { ServiceError } from '../errors.ts';
import { type OutputConstraint, prepareConstraint, type PreparedConstraint, type ToolSpec } from '../inference/structured/index.ts';
import type { ChatMessageIn, ChatRequest, ChatResult, ChatService, ChatStream } from './chat-service.ts';
import { forcedCall } from './openai-chat.ts';
import { type ParsedToolCall, type ToolFormat, toolFormatOf } from './tool-calls.ts';

type Body = Record<string, unknown>;
type Block = Record<string, unknown>;

const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });

/** Fields of the Messages request this server serves (others are refused by name, never ignored). */
const MESSAGE_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'stop_sequences',
  'temperature',
  'top_p',
  'top_k',
  'stream',
  'tools',
  'tool_choice',
  'thinking',
  'metadata',
  'service_tier',
  'output_config',
  'cache_control',
  'speed',
  'diagnostics',
  'user_profile_id',
]);
const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config', 'cache_control']);

/** Known Anthropic features this server does not have, with the reason given to the caller. */
const UNSUPPORTED: Record<string, string> = {
  mcp_servers: 'remote MCP servers are not supported by this server',
  container: 'code-execution containers are not supported by this server',
  context_management: 'server-side context management is not supported by this server',
  output_format: 'the beta field is not supported; use output_config.format',
  inference_geo: 'inference geography is not a choice on this server',
  workspace_id: 'workspaces are not supported by this server',
};

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** context_management asking for no edits changes nothing: accepted, so clients that always send it work. */
const noEdits = (v: unknown) =>
  v === null ||
  (isObj(v) && Object.keys(v).every((k) => k === 'edits') && (v.edits === undefined || (Array.isArray(v.edits) && v.edits.length === 0)));

function checkFields(body: Body, allowed: Set<string>) {
  for (const k of Object.keys(body)) {
    if (allowed.has(k) || body[k] === undefined) continue;
    if (k === 'context_management' && noEdits(body[k])) continue;
    if (k === 'thread') {
      if (body[k] === null) continue;
      // the SDK's thread helpers (and its tool runner) resend the whole conversation unthreaded on this code
      throw new ServiceError(
        400,
        'thread_unsupported_request',
        'thread: message threads are not supported by this server; send the full conversation without thread',
        {
          fields: { details: { error_code: 'thread_unsupported_request' } },
        },
      );
    }
    throw bad(k, UNSUPPORTED[k] ?? 'unknown field; not supported by this server');
  }
}

const num = (body: Body, k: string, lo: number, hi: number, integer = false): number | undefined => {
  const v = body[k];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (integer && !Number.isInteger(v))) {
    throw bad(k, `must be ${integer ? 'an integer' : 'a number'} from ${lo} to ${hi}`);
  }
  return v;
};

/** `system`: a string or text blocks (cache_control is a caching hint: accepted, nothing to cache here). */
function systemText(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  if (!Array.isArray(v)) throw bad('system', 'must be a string or an array of text blocks');
  return v.map((b, i) => {
    if (!isObj(b) || b.type !== 'text' || typeof b.text !== 'string') throw bad(`system.${i}`, 'only text blocks are allowed in system');
    return b.text;
  }).join('\n');
}

/** An image block's bytes (base64) or URL; the chat service refuses images for a model without vision. */
function imageOf(b: Block, field: string): string {
  const src = b.source;
  if (!isObj(src)) throw bad(`${field}.source`, 'required');
  if (src.type === 'base64') {
    if (typeof src.data !== 'string' || typeof src.media_type !== 'string') {
      throw bad(`${field}.source`, 'base64 sources need media_type and data');
    }
    return src.data;
  }
  if (src.type === 'url') {
    if (typeof src.url !== 'string') throw bad(`${field}.source.url`, 'must be a string');
    return src.url;
  }
  throw bad(`${field}.source.type`, `"${String(src.type)}" image sources are not supported (use base64 or url)`);
}

/** A tool_result's content: a string or text and image blocks. */
function toolResultContent(c: unknown, field: string, images: string[]): string {
  if (c === undefined || c === null) return '';
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) throw bad(`${field}.content`, 'must be a string or an array of blocks');
  const parts: string[] = [];
  c.forEach((b, j) => {
    const f = `${field}.content.${j}`;
    if (!isObj(b)) throw bad(f, 'must be a block');
    if (b.type === 'text' && typeof b.text === 'string') parts.push(b.text);
    else if (b.type === 'image') images.push(imageOf(b, f));
    else throw bad(`${f}.type`, `"${String(b.type)}" blocks are not supported inside tool_result`);
  });
  return parts.join('\n');
}

/** Anthropic messages → the chat service's messages (tool results become tool turns named by their call). */
export function toChatMessages(input: unknown, system?: string): ChatMessageIn[] {
  if (!Array.isArray(input) || input.length === 0) throw bad('messages', 'must be a non-empty array');
  const out: ChatMessageIn[] = system ? [{ role: 'system', content: system }] : [];
  const callNames = new Map<string, string>();
  input.forEach((raw, i) => {
    const field = `messages.${i}`;
    if (!isObj(raw)) throw bad(field, 'must be an object');
    const role = raw.role;
    if (role !== 'user' && role !== 'assistant') throw bad(`${field}.role`, 'must be "user" or "assistant"');
    const content = raw.content;
    if (typeof content === 'string') {
      out.push({ role, content });
      return;
    }
    if (!Array.isArray(content)) throw bad(`${field}.content`, 'must be a string or an array of content blocks');
    const texts: string[] = [];
    const images: string[] = [];
    let thinking = '';
    const calls: unknown[] = [];
    content.forEach((b, j) => {
      const f = `${field}.content.${j}`;
      if (!isObj(b)) throw bad(f, 'must be a content block');
      const type = b.type;
      if (type === 'text') {
        if (typeof b.text !== 'string') throw bad(`${f}.text`, 'must be a string');
        texts.push(b.text);
      } else if (type === 'image' && role === 'user') images.push(imageOf(b, f));
      else if (type === 'tool_result' && role === 'user') {
        const id = b.tool_use_id;
        if (typeof id !== 'string') throw bad(`${f}.tool_use_id`, 'required');
        const name = callNames.get(id);
        if (!name) throw bad(`${f}.tool_use_id`, `"${id}" does not match a tool_use block of an earlier assistant message`);
        const resultImages: string[] = [];
        const text = toolResultContent(b.content, f, resultImages);
        const msg: ChatMessageIn = {
          role: 'tool',
          content: b.is_error === true ? `Error: ${text}` : text,
          tool_name: name,
          tool_call_id: id,
        };
        if (resultImages.length) msg.images = resultImages;
        out.push(msg);
      } else if (type === 'tool_use' && role === 'assistant') {
        if (typeof b.id !== 'string' || typeof b.name !== 'string' || !isObj(b.input)) {
          throw bad(f, 'tool_use needs id, name and an input object');
        }
        callNames.set(b.id, b.name);
        calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: b.input } });
      } else if (type === 'thinking' && role === 'assistant') {
        if (typeof b.thinking !== 'string') throw bad(`${f}.thinking`, 'must be a string');
        thinking += b.thinking;
      } else if (type === 'redacted_thinking' && role === 'assistant') {
        // opaque reasoning of another server: nothing a local model can read
      } else throw bad(`${f}.type`, `"${String(type)}" blocks are not supported in a ${role} message by this server`);
    });
    if (role === 'assistant') {
      const m: ChatMessageIn = { role, content: texts.join('\n') };
      if (thinking) m.thinking = thinking;
      if (calls.length) m.tool_calls = calls;
      out.push(m);
    } else if (texts.length || images.length) {
      const m: ChatMessageIn = { role, content: texts.join('\n') };
      if (images.length) m.images = images;
      out.push(m);
    }
  });
  if ((input.at(-1) as Body).role === 'assistant') {
    throw bad(
      `messages.${input.length - 1}`,
      'a final assistant message (prefill) is not supported by this server: end with a user message',
    );
  }
  return out;
}

interface ToolsPlan {
  tools?: unknown[];
  forced?: ToolSpec[];
  disableParallel: boolean;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

/** Anthropic tools → the template's function tools; tool_choice auto / any / tool / none. */
function planTools(body: Body): ToolsPlan {
  const choice = body.tool_choice;
  if (choice !== undefined && choice !== null && (!isObj(choice) || !['auto', 'any', 'tool', 'none'].includes(choice.type as string))) {
    throw bad('tool_choice.type', 'must be one of auto, any, tool, none');
  }
  const c = (choice ?? { type: 'auto' }) as Body;
  const disableParallel = c.disable_parallel_tool_use === true;
  const tools = body.tools;
  if (tools === undefined || tools === null) {
    if (c.type === 'any' || c.type === 'tool') throw bad('tool_choice', 'given without tools');
    return { disableParallel };
  }
  if (!Array.isArray(tools)) throw bad('tools', 'must be an array');
  const names = new Set<string>();
  const specs: ToolSpec[] = [];
  const defs = tools.map((t, i) => {
    if (!isObj(t)) throw bad(`tools.${i}`, 'must be an object');
    if (t.type !== undefined && t.type !== null && t.type !== 'custom') {
      throw bad(
        `tools.${i}.type`,
        `server tool "${String(t.type)}" is not supported by this server (only custom tools with an input_schema)`,
      );
    }
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) throw bad(`tools.${i}.name`, 'must match ^[a-zA-Z0-9_-]{1,128}$');
    if (names.has(t.name)) throw bad(`tools.${i}.name`, `"${t.name}" is given twice`);
    if (!isObj(t.input_schema)) throw bad(`tools.${i}.input_schema`, 'required: a JSON Schema object');
    if (t.description !== undefined && typeof t.description !== 'string') throw bad(`tools.${i}.description`, 'must be a string');
    names.add(t.name);
    specs.push({ name: t.name, parameters: t.input_schema });
    return {
      type: 'function',
      function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.input_schema },
    };
  });
  if (c.type === 'none') return { disableParallel };
  if (c.type === 'auto') return { tools: defs, disableParallel };
  if (c.type === 'any') return { tools: defs, forced: specs, disableParallel };
  const spec = specs.find((s) => s.name === c.name);
  if (typeof c.name !== 'string') throw bad('tool_choice.name', 'required when tool_choice.type is "tool"');
  if (!spec) throw bad('tool_choice.name', `"${c.name}" is not among tools`);
  return { tools: defs, forced: [spec], disableParallel };
}

/**
 * thinking: enabled / between_tools (on), disabled (off), adaptive (the model's template decides); absent
 * means off, as Anthropic's default. `display: omitted` keeps the blocks but not their text.
 */
function thinkingOf(body: Body, maxTokens: number | undefined): { think: boolean | undefined; omit: boolean } {
  const t = body.thinking;
  if (t === undefined || t === null) return { think: false, omit: false };
  if (!isObj(t)) throw bad('thinking', 'must be an object');
  if (t.display !== undefined && t.display !== null && t.display !== 'summarized' && t.display !== 'omitted') {
    throw bad('thinking.display', 'must be "summarized" or "omitted"');
  }
  const omit = t.display === 'omitted';
  if (t.type === 'disabled') return { think: false, omit };
  if (t.type === 'adaptive') return { think: undefined, omit };
  if (t.type === 'between_tools') return { think: true, omit };
  if (t.type !== 'enabled') throw bad('thinking.type', 'must be one of enabled, adaptive, between_tools, disabled');
  const budget = t.budget_tokens;
  if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1) {
    throw bad('thinking.budget_tokens', 'must be a positive integer');
  }
  if (maxTokens !== undefined && budget >= maxTokens) throw bad('thinking.budget_tokens', 'must be less than max_tokens');
  return { think: true, omit };
}

/** output_config: format json_schema is enforced by constrained decoding; effort has no counterpart here (accepted). */
function outputFormatOf(body: Body): OutputConstraint | undefined {
  const oc = body.output_config;
  if (oc === undefined || oc === null) return undefined;
  if (!isObj(oc)) throw bad('output_config', 'must be an object');
  for (const k of Object.keys(oc)) {
    if (k !== 'effort' && k !== 'format') throw bad(`output_config.${k}`, 'unknown field; not supported by this server');
  }
  if (oc.effort !== undefined && oc.effort !== null && !['low', 'medium', 'high', 'xhigh', 'max'].includes(oc.effort as string)) {
    throw bad('output_config.effort', 'must be one of low, medium, high, xhigh, max');
  }
  const f = oc.format;
  if (f === undefined || f === null) return undefined;
  if (!isObj(f) || f.type !== 'json_schema' || !isObj(f.schema)) {
    throw bad('output_config.format', 'must be {"type":"json_schema","schema":{...}}');
  }
  return { type: 'json_schema', schema: f.schema };
}

function checkMeta(body: Body) {
  if (body.metadata !== undefined && body.metadata !== null) {
    if (!isObj(body.metadata)) throw bad('metadata', 'must be an object');
    for (const k of Object.keys(body.metadata)) if (k !== 'user_id') throw bad(`metadata.${k}`, 'unknown field; only user_id is accepted');
  }
  const tier = body.service_tier;
  if (tier !== undefined && tier !== null && tier !== 'auto' && tier !== 'standard_only') {
    throw bad('service_tier', 'must be "auto" or "standard_only"');
  }
  const speed = body.speed;
  if (speed !== undefined && speed !== null && speed !== 'standard' && speed !== 'fast') throw bad('speed', 'must be "standard" or "fast"');
}

export interface MessagesPlan {
  request: ChatRequest;
  stream: boolean;
  disableParallel: boolean;
  /** thinking.display omitted: thinking blocks carry no text. */
  omitThinking: boolean;
  /** The forced call's format once the model is loaded (tool_choice any / tool); undefined otherwise. */
  forcedFormat: () => ToolFormat | undefined;
}

function baseRequest(body: Body, maxTokens: number | undefined, signal?: AbortSignal) {
  if (typeof body.model !== 'string' || !body.model) throw bad('model', 'required');
  const { think, omit } = thinkingOf(body, maxTokens);
  const messages = toChatMessages(body.messages, systemText(body.system));
  const { tools, forced, disableParallel } = planTools(body);
  if (forced && think) throw bad('thinking', 'thinking cannot be enabled when tool_choice forces tool use ("any" or "tool")');
  const format = outputFormatOf(body);
  if (format && forced) throw bad('output_config.format', 'cannot be combined with forced tool use (tool_choice "any" or "tool")');
  // constrained output is JSON from its first token: the template's thinking is switched off for it
  const request: ChatRequest = { model: body.model, messages, tools, think: forced || format ? false : think, signal };
  return { request, forced, format, disableParallel, omit };
}

/** Validates a Messages body and plans the generation (every 400 before anything runs). */
export function planMessages(body: Body, signal?: AbortSignal): MessagesPlan {
  checkFields(body, MESSAGE_FIELDS);
  checkMeta(body);
  const maxTokens = num(body, 'max_tokens', 1, 1 << 24, true);
  if (maxTokens === undefined) throw bad('max_tokens', 'required');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') throw bad('stream', 'must be a boolean');
  let stop: string[] | undefined;
  if (body.stop_sequences !== undefined && body.stop_sequences !== null) {
    const s = body.stop_sequences;
    if (!Array.isArray(s) || !s.every((x) => typeof x === 'string' && x.length > 0)) {
      throw bad('stop_sequences', 'must be an array of non-empty strings');
    }
    stop = s as string[];
  }
  const { request, forced, format, disableParallel, omit } = baseRequest(body, maxTokens, signal);
  request.params = {
    maxTokens,
    stop,
    temperature: num(body, 'temperature', 0, 1),
    topP: num(body, 'top_p', 0, 1),
    topK: num(body, 'top_k', 0, 1 << 20, true),
  };
  let toolFormat: ToolFormat | undefined;
  if (forced) {
    if (stop?.length) throw bad('stop_sequences', 'cannot be combined with forced tool use: a stop sequence could cut the call');
    // The grammar follows the model's own tool-call form, known once the model is loaded.
    const byFormat = new Map<ToolFormat, PreparedConstraint>();
    request.processorsFor = (ctx) => {
      const tpl = ctx.model.tokenizer.chat_template;
      toolFormat = toolFormatOf(typeof tpl === 'string' ? tpl : JSON.stringify(tpl ?? ''));
      let c = byFormat.get(toolFormat);
      if (!c) byFormat.set(toolFormat, c = prepareConstraint({ type: 'tool_call', format: toolFormat, tools: forced }));
      return c.processorsFor(ctx);
    };
    request.raw = true;
  }
  if (format) {
    if (stop?.length) throw bad('stop_sequences', 'cannot be combined with output_config.format: a stop sequence could cut the JSON');
    const c = prepareConstraint(format);
    request.processorsFor = (ctx) => c.processorsFor(ctx);
    request.raw = true;
  }
  return {
    request,
    stream: body.stream === true,
    disableParallel,
    omitThinking: omit,
    forcedFormat: () => (forced ? toolFormat : undefined),
  };
}

/** POST /v1/messages/count_tokens: the prompt's tokens, rendered as a Messages request would be. */
export async function countMessageTokens(chat: ChatService, body: Body, signal?: AbortSignal): Promise<{ input_tokens: number }> {
  checkFields(body, COUNT_FIELDS);
  const { request } = baseRequest(body, undefined, signal);
  const r = await chat.countTokens(request);
  return { input_tokens: r.promptTokens };
}

const msgId = () => `msg_${randomBytes(12).toString('base64url')}`;
const toolUseId = () => `toolu_${randomBytes(12).toString('base64url')}`;

const usage = (input: number, output: number) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
});

function stopOf(r: ChatResult, calls: number): { stop_reason: string; stop_sequence: string | null } {
  if (calls) return { stop_reason: 'tool_use', stop_sequence: null };
  if (r.finishReason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (r.stopSequence !== undefined) return { stop_reason: 'stop_sequence', stop_sequence: r.stopSequence };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

const toolUse = (c: ParsedToolCall) => ({ type: 'tool_use' as const, id: toolUseId(), name: c.name, input: c.arguments });

/** Non-streaming answer: one `message`. */
export async function createMessage(chat: ChatService, plan: MessagesPlan) {
  const r = await (await chat.chat(plan.request)).complete();
  let text = r.message.content;
  let calls = r.message.toolCalls;
  const format = plan.forcedFormat();
  if (format) {
    calls = [forcedCall(text, format)];
    text = '';
  }
  if (plan.disableParallel) calls = calls.slice(0, 1);
  const content: unknown[] = [];
  if (r.message.thinking) content.push({ type: 'thinking', thinking: plan.omitThinking ? '' : r.message.thinking, signature: '' });
  if (text) content.push({ type: 'text', text });
  content.push(...calls.map(toolUse));
  return {
    id: msgId(),
    type: 'message' as const,
    role: 'assistant' as const,
    model: r.model,
    content,
    ...stopOf(r, calls.length),
    usage: usage(r.promptTokens, r.completionTokens),
  };
}

type BlockKind = 'thinking' | 'text';

/** Streaming answer: Anthropic's typed events, in their order; a new block opens whenever the kind changes. */
export async function* messageEvents(s: ChatStream, plan: MessagesPlan): AsyncGenerator<{ type: string } & Record<string, unknown>> {
  yield {
    type: 'message_start',
    message: {
      id: msgId(),
      type: 'message',
      role: 'assistant',
      model: s.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usage(s.promptTokens, 0),
    },
  };
  let index = -1;
  let open: BlockKind | 'tool_use' | undefined;
  const close = function* () {
    if (open !== undefined) yield { type: 'content_block_stop', index };
    open = undefined;
  };
  const start = function* (block: Record<string, unknown>) {
    yield* close();
    index++;
    open = block.type as BlockKind | 'tool_use';
    yield { type: 'content_block_start', index, content_block: block };
  };
  const toolBlocks = function* (c: ParsedToolCall) {
    const { input, ...head } = toolUse(c);
    yield* start({ ...head, input: {} });
    yield { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } };
  };
  let calls = 0;
  let raw = '';
  const forced = plan.forcedFormat;
  for await (const d of s) {
    if (forced()) {
      raw += d.content; // a forced call is sent whole once it is complete
      continue;
    }
    if (d.thinking) {
      if (open !== 'thinking') yield* start({ type: 'thinking', thinking: '', signature: '' });
      if (!plan.omitThinking) yield { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: d.thinking } };
    }
    if (d.content) {
      if (open !== 'text') yield* start({ type: 'text', text: '' });
      yield { type: 'content_block_delta', index, delta: { type: 'text_delta', text: d.content } };
    }
    for (const c of d.toolCalls) {
      if (plan.disableParallel && calls > 0) continue;
      calls++;
      yield* toolBlocks(c);
    }
  }
  const r = await s.result;
  const format = forced();
  if (format) {
    calls++;
    yield* toolBlocks(forcedCall(raw, format));
  }
  yield* close();
  yield { type: 'message_delta', delta: stopOf(r, calls), usage: { output_tokens: r.completionTokens } };
  yield { type: 'message_stop' };
}
