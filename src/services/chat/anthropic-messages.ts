/**
 * The Anthropic Messages API over the chat service, free of HTTP: a request body, validated by its schema
 * (src/schemas/anthropic.ts), → a ChatRequest, forced tool use (`tool_choice` any / tool) enforced by
 * constrained decoding, and the answer shaped as a `message` or as the stream's typed events
 * (message_start, content_block_start/delta/stop, message_delta, message_stop). See docs/api/anthropic.md.
 */
import { ServiceError } from '../errors.ts';
import { type OutputConstraint, prepareConstraint, type ToolSpec } from '../inference/structured/index.ts';
import type { AnthropicMessage, CountTokensBody, MessagesBody } from '../../schemas/anthropic.ts';
import type { ChatMessageIn, ChatRequest, ChatResult, ChatService, ChatStream } from './chat-service.ts';
import { forcedCall, forcedCallConstraint } from './forced-call.ts';
import type { ParsedToolCall, ToolFormat } from './tool-calls.ts';
import { randomId } from '../../ids.ts';

type Prompt = MessagesBody | CountTokensBody;
type ImageSource = { type: 'base64'; data: string } | { type: 'url'; url: string };

const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });

/** `system`: a string or text blocks (cache_control is a caching hint: accepted, nothing to cache here). */
function systemText(system: Prompt['system']): string | undefined {
  if (system === undefined || system === null) return undefined;
  return typeof system === 'string' ? system : system.map((b) => b.text).join('\n');
}

/** An image block's bytes (base64) or URL; the chat service refuses images for a model without vision. */
const imageOf = (src: ImageSource): string => (src.type === 'base64' ? src.data : src.url);

/** A tool_result's content: a string or text and image blocks. */
function toolResultContent(c: string | { type: string; text?: string; source?: unknown }[] | null | undefined, images: string[]): string {
  if (c === undefined || c === null) return '';
  if (typeof c === 'string') return c;
  const parts: string[] = [];
  for (const b of c) {
    if (b.type === 'text') parts.push(b.text!);
    else images.push(imageOf(b.source as ImageSource));
  }
  return parts.join('\n');
}

/** Anthropic messages → the chat service's messages (tool results become tool turns named by their call). */
export function toChatMessages(input: AnthropicMessage[], system?: string): ChatMessageIn[] {
  const out: ChatMessageIn[] = system ? [{ role: 'system', content: system }] : [];
  const callNames = new Map<string, string>();
  input.forEach(({ role, content }, i) => {
    if (typeof content === 'string') {
      out.push({ role, content });
      return;
    }
    const texts: string[] = [];
    const images: string[] = [];
    let thinking = '';
    const calls: unknown[] = [];
    (content as Record<string, unknown>[]).forEach((b, j) => {
      if (b.type === 'text') texts.push(b.text as string);
      else if (b.type === 'image') images.push(imageOf(b.source as ImageSource));
      else if (b.type === 'tool_result') {
        const id = b.tool_use_id as string;
        const name = callNames.get(id);
        if (!name) {
          throw bad(`messages.${i}.content.${j}.tool_use_id`, `"${id}" does not match a tool_use block of an earlier assistant message`);
        }
        const resultImages: string[] = [];
        const text = toolResultContent(b.content as Parameters<typeof toolResultContent>[0], resultImages);
        const msg: ChatMessageIn = {
          role: 'tool',
          content: b.is_error === true ? `Error: ${text}` : text,
          tool_name: name,
          tool_call_id: id,
        };
        if (resultImages.length) msg.images = resultImages;
        out.push(msg);
      } else if (b.type === 'tool_use') {
        callNames.set(b.id as string, b.name as string);
        calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: b.input } });
      } else if (b.type === 'thinking') thinking += b.thinking as string;
      // redacted_thinking: opaque reasoning of another server, nothing a local model can read
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
  if (input.at(-1)!.role === 'assistant') {
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

/** Anthropic tools → the template's function tools; tool_choice auto / any / tool / none. */
function planTools(body: Prompt): ToolsPlan {
  const c = body.tool_choice ?? { type: 'auto' as const };
  const disableParallel = 'disable_parallel_tool_use' in c && c.disable_parallel_tool_use === true;
  if (!body.tools) return { disableParallel };
  const names = new Set<string>();
  const specs: ToolSpec[] = [];
  const defs = body.tools.map((t, i) => {
    if (names.has(t.name)) throw bad(`tools.${i}.name`, `"${t.name}" is given twice`);
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
  if (!spec) throw bad('tool_choice.name', `"${c.name}" is not among tools`);
  return { tools: defs, forced: [spec], disableParallel };
}

/**
 * thinking: enabled / between_tools (on), disabled (off), adaptive (the model's template decides); absent
 * means off, as Anthropic's default. `display: omitted` keeps the blocks but not their text.
 */
function thinkingOf(body: Prompt): { think: boolean | undefined; omit: boolean } {
  const t = body.thinking;
  if (t === undefined || t === null) return { think: false, omit: false };
  const omit = t.display === 'omitted';
  if (t.type === 'disabled') return { think: false, omit };
  if (t.type === 'adaptive') return { think: undefined, omit };
  return { think: true, omit };
}

/** output_config: format json_schema is enforced by constrained decoding; effort has no counterpart here (accepted). */
function outputFormatOf(body: Prompt): OutputConstraint | undefined {
  const f = body.output_config?.format;
  return f ? { type: 'json_schema', schema: f.schema } : undefined;
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

function baseRequest(body: Prompt, signal?: AbortSignal) {
  const { think, omit } = thinkingOf(body);
  const messages = toChatMessages(body.messages, systemText(body.system));
  const { tools, forced, disableParallel } = planTools(body);
  if (forced && think) throw bad('thinking', 'thinking cannot be enabled when tool_choice forces tool use ("any" or "tool")');
  const format = outputFormatOf(body);
  if (format && forced) throw bad('output_config.format', 'cannot be combined with forced tool use (tool_choice "any" or "tool")');
  // constrained output is JSON from its first token: the template's thinking is switched off for it
  const request: ChatRequest = { model: body.model, messages, tools, think: forced || format ? false : think, signal };
  return { request, forced, format, disableParallel, omit };
}

/** Plans the generation of a validated Messages body (every 400 before anything runs). */
export function planMessages(body: MessagesBody, signal?: AbortSignal): MessagesPlan {
  const maxTokens = body.max_tokens!;
  const stop = body.stop_sequences ?? undefined;
  const { request, forced, format, disableParallel, omit } = baseRequest(body, signal);
  request.params = {
    maxTokens,
    stop,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    topK: body.top_k ?? undefined,
  };
  let toolFormat: ToolFormat | undefined;
  if (forced) {
    if (stop?.length) throw bad('stop_sequences', 'cannot be combined with forced tool use: a stop sequence could cut the call');
    const forcedFor = forcedCallConstraint(forced);
    request.processorsFor = (ctx) => {
      const f = forcedFor(ctx);
      toolFormat = f.format;
      return f.constraint.processorsFor(ctx);
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
export async function countMessageTokens(
  chat: ChatService,
  body: CountTokensBody,
  signal?: AbortSignal,
): Promise<{ input_tokens: number }> {
  const { request } = baseRequest(body, signal);
  const r = await chat.countTokens(request);
  return { input_tokens: r.promptTokens };
}

const msgId = () => `msg_${randomId(20)}`;
const toolUseId = () => `toolu_${randomId(20)}`;

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
  let seen = 0;
  const streamed = new Set<number>();
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
    // a call the model writes streams as input_json_delta fragments; one parsed from free output comes whole
    for (const f of d.callFragments ?? []) {
      if (plan.disableParallel && f.index > 0) continue;
      if (f.name !== undefined) {
        streamed.add(f.index);
        yield* start({ type: 'tool_use', id: toolUseId(), name: f.name, input: {} });
      }
      if (f.arguments) yield { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: f.arguments } };
    }
    for (const c of d.toolCalls) {
      const at = seen++;
      if (plan.disableParallel && calls > 0) continue;
      calls++;
      if (!streamed.has(at)) yield* toolBlocks(c);
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
