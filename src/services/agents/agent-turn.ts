/**
 * One chat turn with the server's own extensions: server tools run inside the turn (model → tools →
 * model until an answer, a client tool call, or the step limit) and memory recalled into the turn and
 * written back after it. The answer is the last chat.completion with the usage of every step and two
 * extension fields, `server_tool_calls` and `memory`. Rules in docs/api/agents.md.
 */
import type { ChatService } from '../chat/chat-service.ts';
import { chatCompletion, planChat } from '../chat/openai-chat.ts';
import { parseChatBody } from '../../schemas/openai.ts';
import { ServiceError } from '../errors.ts';
import type { ToolOutcome } from '../tools/tool-call.ts';
import type { ServerTool, ServerToolCatalog, ToolRunContext } from '../tools/server-tools.ts';
import type { Fact, MemoryService } from './memory-service.ts';

type Body = Record<string, unknown>;
type Message = Record<string, unknown>;

/** Tool rounds of one turn when neither the request nor its agent says. */
export const DEFAULT_STEP_LIMIT = 4;
export const MAX_STEP_LIMIT = 32;
/** The most characters of one tool result put into the conversation (longer ones are cut and say so). */
export const TOOL_RESULT_CHARS = 4000;

const bad = (field: string, message: string) =>
  new ServiceError(400, 'invalid_request', `${field}: ${message}`, { details: [{ field, message }] });

export interface ServerToolCall {
  id: string;
  step: number;
  name: string;
  arguments: unknown;
  status: 'completed' | 'failed' | 'skipped';
  output?: unknown;
  error?: { status: number; reason: string; message: string };
}

export interface TurnExtensions {
  tools: ServerTool[];
  stepLimit: number;
  memory?: { store: string; recall: boolean; write: boolean; extract: 'rules' | 'model' };
}

/** The constrained extraction call of `extract: "model"`: the facts the user states about themself. */
const EXTRACT_SCHEMA = {
  type: 'object',
  properties: { facts: { type: 'array', maxItems: 5, items: { type: 'string', minLength: 1, maxLength: 300 } } },
  required: ['facts'],
  additionalProperties: false,
};
const EXTRACT_INSTRUCTIONS =
  'List the facts the user states about themself in their message (name, preferences, circumstances), each as one short sentence. Leave out questions and requests. Answer with JSON only.';

/** Fields of the request this module serves, removed before the chat service plans it. */
const EXTENSION_FIELDS = ['server_tools', 'step_limit', 'memory', 'memory_store'] as const;

export const usesExtensions = (body: Body) => EXTENSION_FIELDS.some((k) => body[k] !== undefined && body[k] !== null && body[k] !== false);

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
    ? content.filter((p) => p?.type === 'text' && typeof p.text === 'string').map((p) => p.text as string).join('\n')
    : '';

function parseArgs(raw: string): Record<string, unknown> | Error {
  try {
    const v = JSON.parse(raw || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : new Error('the arguments are not a JSON object');
  } catch (e) {
    return new Error(`the arguments are not JSON: ${(e as Error).message}`);
  }
}

function compact(result: unknown): string {
  const s = typeof result === 'string' ? result : JSON.stringify(result);
  return s.length <= TOOL_RESULT_CHARS ? s : `${s.slice(0, TOOL_RESULT_CHARS)} …[cut: ${s.length} characters in all]`;
}

/** A search page reduced to what a model needs to cite it. */
function toolResultView(name: string, result: unknown): unknown {
  const data = (result as { data?: unknown[] })?.data;
  if (name === 'vector_store_search' && Array.isArray(data)) {
    return data.map((d) => {
      const x = d as { file_id?: string; filename?: string; score?: number; content?: { text?: string }[] };
      return { file_id: x.file_id, filename: x.filename, score: x.score, text: (x.content ?? []).map((c) => c.text ?? '').join('\n') };
    });
  }
  return result;
}

export class AgentTurns {
  constructor(private readonly chat: ChatService, private readonly catalog: ServerToolCatalog, private readonly memory: MemoryService) {}

  /** Validates and resolves the extension fields (400 naming an unknown tool or store). */
  async extensions(owner: string, body: Body, signal?: AbortSignal): Promise<TurnExtensions> {
    const tools = await this.catalog.resolve(body.server_tools, signal);
    let stepLimit = DEFAULT_STEP_LIMIT;
    if (body.step_limit !== undefined && body.step_limit !== null) {
      const n = body.step_limit;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > MAX_STEP_LIMIT) {
        throw bad('step_limit', `must be an integer from 1 to ${MAX_STEP_LIMIT}`);
      }
      stepLimit = n;
    }
    let memory: TurnExtensions['memory'];
    const m = body.memory;
    if (m !== undefined && m !== null && typeof m !== 'boolean' && (typeof m !== 'object' || Array.isArray(m))) {
      throw bad('memory', 'must be a boolean or an object {recall, write}');
    }
    const store = body.memory_store;
    if (store !== undefined && store !== null && (typeof store !== 'string' || !store)) {
      throw bad('memory_store', 'must be a non-empty string');
    }
    if (m && !store) throw bad('memory', 'needs a memory_store (in the request or its agent)');
    if (store && m !== false) {
      await this.memory.requireStore(owner, store as string);
      const o = typeof m === 'object' && m ? (m as { recall?: unknown; write?: unknown; extract?: unknown }) : {};
      if (o.extract !== undefined && o.extract !== 'rules' && o.extract !== 'model') {
        throw bad('memory.extract', 'must be "rules" or "model"');
      }
      memory = {
        store: store as string,
        recall: o.recall !== false,
        write: o.write !== false,
        extract: o.extract === 'model' ? 'model' : 'rules',
      };
    }
    return { tools, stepLimit, memory };
  }

  async run(owner: string, body: Body, ext: TurnExtensions, ctx: ToolRunContext) {
    const base: Body = { ...body };
    for (const k of EXTENSION_FIELDS) delete base[k];
    if (!Array.isArray(base.messages)) throw bad('messages', 'must be a non-empty array');
    let messages = base.messages as Message[];
    const lastUser = textOf([...messages].reverse().find((x) => x?.role === 'user')?.content);

    let recalled: Fact[] = [];
    if (ext.memory?.recall) {
      recalled = await this.memory.recall(owner, ext.memory.store, lastUser, ctx.signal);
      if (recalled.length) {
        const note = { role: 'system', content: `Facts remembered about the user:\n${recalled.map((f) => `- ${f.text}`).join('\n')}` };
        const lead = messages.findIndex((x) => x?.role !== 'system' && x?.role !== 'developer');
        messages = lead < 0 ? [...messages, note] : [...messages.slice(0, lead), note, ...messages.slice(lead)];
      }
    }

    const byName = new Map(ext.tools.map((t) => [t.name, t]));
    const clientTools = Array.isArray(base.tools) ? (base.tools as { function?: { name?: string } }[]) : [];
    for (const t of clientTools) {
      if (t?.function?.name && byName.has(t.function.name)) {
        throw bad('tools', `"${t.function.name}" is also a server tool; rename the client tool`);
      }
    }
    if (ext.tools.length && typeof base.n === 'number' && base.n > 1) throw bad('n', 'must be 1 with server tools');
    const withServerTools: Body = ext.tools.length
      ? {
        tools: [
          ...clientTools,
          ...ext.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
        ],
      }
      : {};
    const calls: ServerToolCall[] = [];
    const usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    let completion: Awaited<ReturnType<typeof chatCompletion>>;
    for (let step = 0;; step++) {
      const lastStep = step >= ext.stepLimit;
      // the step limit reached: one more answer, without the server tools, so the turn ends with text
      const tools = lastStep
        ? (clientTools.length ? { tools: clientTools } : { tools: undefined, tool_choice: undefined })
        : withServerTools;
      // a forced tool_choice applies to the first step only (else every step would call again)
      const choice = step > 0 && !lastStep ? { tool_choice: undefined } : {};
      const plan = planChat(
        parseChatBody({ ...base, ...tools, ...choice, messages, stream: false, stream_options: undefined }),
        ctx.signal,
      );
      // the loop checks server calls itself (unknown names, bound arguments) and reports failures to the model
      if (ext.tools.length) plan.request.freeCalls = true;
      completion = await chatCompletion(this.chat, plan);
      for (const k of Object.keys(usage) as (keyof typeof usage)[]) usage[k] += completion.usage[k];
      const msg = completion.choices[0]!.message as {
        content: string | null;
        tool_calls?: { id: string; function: { name: string; arguments: string } }[];
      };
      const made = msg.tool_calls ?? [];
      const mine = made.filter((c) => byName.has(c.function.name));
      const theirs = made.filter((c) => !byName.has(c.function.name));
      if (theirs.length) {
        // a client tool call ends the turn: the client runs it; server calls of the same message are not run
        msg.tool_calls = theirs;
        break;
      }
      if (!mine.length) break;
      if (lastStep) {
        // calls the model still makes past the step limit are listed, not run, and not sent as tool calls
        for (const c of mine) {
          calls.push({
            id: c.id,
            step: step + 1,
            name: c.function.name,
            arguments: ((a) => (a instanceof Error ? {} : a))(parseArgs(c.function.arguments)),
            status: 'skipped',
            error: { status: 429, reason: 'step_limit_reached', message: `the turn reached its step limit (${ext.stepLimit})` },
          });
        }
        delete msg.tool_calls;
        if (msg.content === null) msg.content = '';
        const ch = completion.choices[0] as { finish_reason: string };
        if (ch.finish_reason === 'tool_calls') ch.finish_reason = 'stop';
        break;
      }
      messages = [...messages, {
        role: 'assistant',
        content: msg.content,
        tool_calls: mine.map((c) => ({ id: c.id, type: 'function', function: c.function })),
      }];
      for (const c of mine) {
        const tool = byName.get(c.function.name)!;
        const parsed = parseArgs(c.function.arguments);
        const args = parsed instanceof Error ? {} : { ...parsed, ...tool.bound };
        let outcome: ToolOutcome;
        if (parsed instanceof Error) outcome = { ok: false, status: 400, reason: 'invalid_arguments', message: parsed.message };
        else {
          try {
            outcome = await tool.run(args, ctx);
          } catch (e) {
            ctx.signal?.throwIfAborted();
            outcome = e instanceof ServiceError
              ? { ok: false, status: e.status, reason: e.reason, message: e.message }
              : { ok: false, status: 502, reason: 'tool_failed', message: (e as Error)?.message ?? String(e) };
          }
        }
        const record: ServerToolCall = outcome.ok
          ? {
            id: c.id,
            step: step + 1,
            name: c.function.name,
            arguments: args,
            status: 'completed',
            output: toolResultView(c.function.name, outcome.result),
          }
          : {
            id: c.id,
            step: step + 1,
            name: c.function.name,
            arguments: args,
            status: 'failed',
            error: { status: outcome.status, reason: outcome.reason, message: outcome.message },
          };
        calls.push(record);
        messages = [...messages, {
          role: 'tool',
          tool_call_id: c.id,
          content: compact(record.status === 'completed' ? record.output : { error: record.error }),
        }];
      }
    }

    let written: Fact[] = [];
    if (ext.memory?.write && lastUser) {
      if (ext.memory.extract === 'model') {
        const facts = await this.#extractFacts(completion!.model, lastUser, ctx.signal);
        for (const k of Object.keys(usage) as (keyof typeof usage)[]) usage[k] += facts.usage[k];
        written = await this.memory.remember(owner, ext.memory.store, lastUser, ctx.signal, facts.facts, 'model');
      } else {
        written = await this.memory.remember(owner, ext.memory.store, lastUser, ctx.signal);
      }
    }
    return {
      ...completion!,
      usage,
      ...(ext.tools.length ? { server_tool_calls: calls } : {}),
      ...(ext.memory ? { memory: { store: ext.memory.store, recalled, written } } : {}),
    };
  }

  async #extractFacts(model: string, message: string, signal?: AbortSignal) {
    const plan = planChat(
      parseChatBody({
        model,
        temperature: 0,
        max_tokens: 400,
        messages: [{ role: 'system', content: EXTRACT_INSTRUCTIONS }, { role: 'user', content: message }],
        response_format: { type: 'json_schema', json_schema: { name: 'facts', schema: EXTRACT_SCHEMA, strict: true } },
      }),
      signal,
    );
    const r = await chatCompletion(this.chat, plan);
    const content = r.choices[0]!.message.content ?? '';
    let facts: string[] = [];
    try {
      facts = (JSON.parse(content) as { facts: string[] }).facts;
    } catch {
      facts = []; // cut by max_tokens: nothing is written rather than a half fact
    }
    return { facts, usage: r.usage };
  }
}

/** A finished answer as the chunks of a stream (server tools and memory answer whole, then stream). */
export function* completionChunks(
  c:
    & { id: string; created: number; model: string; choices: { message: Record<string, unknown>; finish_reason: string }[]; usage: unknown }
    & Record<string, unknown>,
  includeUsage: boolean,
) {
  const { id, created, model } = c;
  const m = c.choices[0]!.message as { content?: string | null; reasoning_content?: string; tool_calls?: Record<string, unknown>[] };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...(includeUsage ? { usage: null } : {}),
    ...extra,
  });
  yield chunk({ role: 'assistant', content: '' });
  if (m.reasoning_content) yield chunk({ reasoning_content: m.reasoning_content });
  if (m.content) yield chunk({ content: m.content });
  if (m.tool_calls?.length) yield chunk({ tool_calls: m.tool_calls.map((t, index) => ({ index, ...t })) });
  const ext = { ...(c.server_tool_calls ? { server_tool_calls: c.server_tool_calls } : {}), ...(c.memory ? { memory: c.memory } : {}) };
  yield chunk({}, c.choices[0]!.finish_reason, ext);
  if (includeUsage) yield { id, object: 'chat.completion.chunk', created, model, system_fingerprint: null, choices: [], usage: c.usage };
}
