/**
 * The Responses API over the chat service, free of HTTP: a request (input items, instructions, chaining
 * through previous_response_id, function tools, file_search, text.format) runs as one chat generation;
 * its deltas become output items and stream events (events.ts). Responses are stored per owner unless
 * `store` is false; the stored input items are the effective input with the chained prelude expanded.
 */
import {
  allInputItems,
  deleteResponseRow,
  getResponseRow,
  inputItemPosition,
  insertResponse,
  pageInputItems,
} from '../../store/responses.ts';
import type { Db } from '../../store/schema.ts';
import type { ChatService } from '../chat/chat-service.ts';
import { forcedCall } from '../chat/forced-call.ts';
import { planChat } from '../chat/openai-chat.ts';
import { parseChatBody } from '../../schemas/openai.ts';
import { type CompactBody, InputItems, type ResponsesBody } from '../../schemas/responses.ts';
import * as v from 'valibot';
import { type DocFormat, MIME, sniffFormat } from '../documents/detect.ts';
import { workers } from '../workers/index.ts';
import { requireFormat } from '../documents/detect.ts';
import { notFound, ServiceError, unsupportedFileType } from '../errors.ts';
import type { FileStore } from '../files/file-store.ts';
import type { VectorStores } from '../retrieval/vector-stores.ts';
import { type Citation, type Event, OutputBuilder } from './events.ts';
import { bad, chatTools, type Item, itemId, type ItemResolver, itemsToMessages, normaliseInput, responseFormat } from './request.ts';
import { bytesToBase64, bytesToBase64Url } from '../base64.ts';
import { randomId } from '../../ids.ts';
import { decodeBase64 } from '../../runtime/base64.ts';

/** A finished response as a chain continues from it: its effective input and its output. */
export interface ChainLink {
  id: string;
  owner: string;
  input: Item[];
  output: Item[];
}

/** store:false responses kept for one WebSocket connection (continuation only there). */
export type ConnectionCache = Map<string, ChainLink>;

const secs = () => Math.floor(Date.now() / 1000);
const previousNotFound = (id: string) =>
  new ServiceError(400, 'previous_response_not_found', `Previous response with id '${id}' not found.`, {
    details: [{ field: 'previous_response_id', message: 'not found' }],
  });

export interface CreateOptions {
  signal?: AbortSignal;
  cache?: ConnectionCache;
}

export interface Started {
  stream: boolean;
  events: AsyncGenerator<Event>;
  /** The error a failed response ended with (after its response.failed event). */
  failure(): unknown;
}

export class ResponsesService {
  constructor(private db: Db, private chat: ChatService, private files: FileStore, private vectorStores: VectorStores) {}

  #resolver(owner: string): ItemResolver {
    // a document folded into the context is read in the worker pool, under the document limits, like every document task
    const docText = async (bytes: Uint8Array, format: DocFormat) =>
      (await workers.run('document.analyse', [bytes, format, { ocrScans: true }], {})).markdown;
    return {
      fileText: async (fileId) => {
        const f = await this.files.get(owner, fileId);
        const format = await requireFormat(f.path, undefined, 'input_file');
        return { filename: f.filename, text: await docText(await this.files.read(owner, fileId), format) };
      },
      inlineFileText: async (filename, data) => {
        const b64 = data.replace(/^data:[^,]*;base64,/, '');
        const bytes = decodeBase64(b64);
        if (!bytes) throw bad('input_file.file_data', `input_file "${filename}": file_data is not base64`);
        const format = sniffFormat(bytes.subarray(0, 65536), () => bytes);
        if (!format) throw unsupportedFileType(`input_file "${filename}": not a format the document pipeline reads`);
        return { filename, text: await docText(bytes, format) };
      },
      imageDataUrl: async (fileId) => {
        const bytes = await this.files.read(owner, fileId);
        const format = sniffFormat(bytes.subarray(0, 65536));
        if (!format || !MIME[format]?.startsWith('image/')) throw bad('input_image.file_id', `file '${fileId}' is not an image`);
        return `data:${MIME[format]};base64,${bytesToBase64(bytes)}`;
      },
      expandCompaction: (enc) => decodeCompaction(enc),
    };
  }

  async #previous(owner: string, id: string, cache?: ConnectionCache): Promise<ChainLink> {
    const cached = cache?.get(id);
    if (cached && cached.owner === owner) return cached;
    const row = await getResponseRow(this.db, id);
    if (!row || row.owner_id !== owner) throw previousNotFound(id);
    const body = JSON.parse(row.body) as { output: Item[] };
    return { id, owner, input: (await allInputItems(this.db, id)) as Item[], output: body.output };
  }

  /**
   * Validates and starts a response. Everything a client can get wrong (fields, model, files, previous
   * response, tools) fails here, before any event; the generation then runs as the events are read.
   */
  async create(owner: string, body: ResponsesBody, o: CreateOptions = {}): Promise<Started> {
    if (!body.model) throw bad('model', 'required');
    const store = body.store !== false;
    const prevId = body.previous_response_id;
    let prelude: Item[] = [];
    if (typeof prevId === 'string') {
      try {
        const prev = await this.#previous(owner, prevId, o.cache);
        prelude = [...prev.input, ...prev.output.filter((x) => x.type !== 'file_search_call')];
      } catch (e) {
        o.cache?.delete(prevId);
        throw e;
      }
    }
    const input = normaliseInput(body.input);
    if (input.length === 0 && prelude.length === 0) throw bad('input', 'required');
    const effective = [...prelude, ...input];
    // a continuation must answer the previous turn's calls with outputs of calls that exist
    const calls = new Set(effective.filter((x) => x.type === 'function_call').map((x) => x.call_id));
    for (const [i, it] of input.entries()) {
      if (it.type === 'function_call_output' && !calls.has(it.call_id)) {
        if (typeof prevId === 'string') o.cache?.delete(prevId);
        throw bad(`input[${i}].call_id`, `no function_call with call_id '${String(it.call_id)}' precedes this output`);
      }
    }

    const resolver = this.#resolver(owner);
    const messages = await itemsToMessages(effective, resolver);
    const instructions = typeof body.instructions === 'string' && body.instructions ? body.instructions : null;
    const { tools, tool_choice, fileSearch } = chatTools(body);
    let citations: Citation[] = [];
    let searchItem: (Item & { id: string }) | undefined;
    if (fileSearch && body.tool_choice !== 'none') {
      const query = lastUserText(effective);
      const hits = query
        ? await this.vectorStores.search(owner, fileSearch.vector_store_ids, query, {
          limit: fileSearch.max_num_results,
          signal: o.signal,
          filters: fileSearch.filters,
        })
        : [];
      const include = Array.isArray(body.include) && body.include.includes('file_search_call.results');
      searchItem = {
        id: itemId('fs'),
        type: 'file_search_call',
        status: 'completed',
        queries: query ? [query] : [],
        results: include
          ? hits.map((h) => ({ file_id: h.file_id, filename: h.filename, score: h.score, attributes: h.attributes, text: h.text }))
          : null,
      };
      const seen = new Set<string>();
      citations = hits.filter((h) => !seen.has(h.file_id) && seen.add(h.file_id)).map((h) => ({
        file_id: h.file_id,
        filename: h.filename,
      }));
      if (hits.length) {
        const context = hits.map((h, i) => `[${i + 1}] ${h.filename}:\n${h.text}`).join('\n\n');
        messages.unshift({
          role: 'system',
          content: `Passages retrieved by file search for the user's question; answer from them:\n\n${context}`,
        });
      }
    }
    if (instructions) messages.unshift({ role: 'system', content: instructions });
    // consecutive system messages at the start become one: many chat templates accept a single system turn
    while (messages.length > 1 && messages[0]!.role === 'system' && messages[1]!.role === 'system') {
      const [a, b] = messages.splice(0, 2);
      messages.unshift({ role: 'system', content: `${a!.content}\n\n${b!.content}` });
    }
    if (!messages.some((m) => m.role !== 'system')) throw bad('input', 'needs at least one message or item besides instructions');

    const maxOut = body.max_output_tokens;
    const chatBody = {
      model: body.model,
      messages,
      tools,
      tool_choice,
      response_format: responseFormat(body),
      max_tokens: maxOut ?? undefined,
      temperature: body.temperature ?? undefined,
      top_p: body.top_p ?? undefined,
    };
    const plan = planChat(parseChatBody(chatBody), o.signal);
    const stream = await this.chat.chat(plan.request);

    const id = `resp_${randomId(28)}`;
    const created = secs();
    const state = {
      status: 'in_progress' as string,
      completed_at: null as number | null,
      incomplete_details: null as unknown,
      error: null as unknown,
      usage: null as unknown,
    };
    const snapshot = (): Record<string, unknown> => ({
      id,
      object: 'response',
      created_at: created,
      completed_at: state.completed_at,
      status: state.status,
      incomplete_details: state.incomplete_details,
      model: stream.model,
      previous_response_id: prevId ?? null,
      instructions,
      output: builder.output,
      error: state.error,
      tools: responseTools(body),
      tool_choice: body.tool_choice ?? 'auto',
      truncation: 'disabled',
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      text: { format: (body.text as { format?: unknown })?.format ?? { type: 'text' } },
      top_p: body.top_p ?? 1,
      presence_penalty: 0,
      frequency_penalty: 0,
      top_logprobs: 0,
      temperature: body.temperature ?? 1,
      reasoning: { effort: null, summary: null },
      usage: state.usage,
      max_output_tokens: maxOut ?? null,
      max_tool_calls: null,
      store,
      background: false,
      service_tier: 'default',
      metadata: body.metadata ?? {},
      safety_identifier: null,
      prompt_cache_key: typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key : null,
      user: body.user ?? null,
    });
    const builder = new OutputBuilder(() => structuredClone(snapshot()));
    const db = this.db;
    const cache = o.cache;
    let failure: unknown;

    async function* run(): AsyncGenerator<Event> {
      yield* builder.start();
      if (searchItem) {
        yield* builder.whole(searchItem, [
          'response.file_search_call.in_progress',
          'response.file_search_call.searching',
          'response.file_search_call.completed',
        ]);
      }
      const forced = plan.forcedFormat;
      let raw = '';
      let seen = 0;
      const streamed = new Set<number>();
      try {
        for await (const d of stream) {
          if (forced()) {
            raw += d.content; // a forced call is constrained JSON: sent whole once complete
            continue;
          }
          if (d.thinking) { for (const e of builder.reasoning(d.thinking)) yield e; }
          if (d.content) { for (const e of builder.text(d.content)) yield e; }
          // a call the model writes streams its arguments in fragments; one parsed from free output comes whole
          for (const f of d.callFragments ?? []) {
            if (f.name !== undefined) {
              streamed.add(f.index);
              yield* builder.callStart(f.name, callId());
            }
            yield* builder.callDelta(f.arguments);
          }
          for (const c of d.toolCalls) {
            if (streamed.has(seen++)) yield* builder.callDone();
            else yield* builder.functionCall(c.name, JSON.stringify(c.arguments), callId());
          }
        }
        const r = await stream.result;
        const format = forced();
        if (format) {
          const c = forcedCall(raw, format);
          yield* builder.functionCall(c.name, JSON.stringify(c.arguments), callId());
        }
        const cutShort = r.finishReason === 'length';
        // with file_search the answer cites the files it was given, even when the model said nothing
        if (citations.length && !builder.hasMessage() && !format) yield* builder.text('');
        yield* builder.close(citations);
        const reasoningTokens = Math.min(builder.reasoningDeltas, r.completionTokens);
        state.usage = {
          input_tokens: r.promptTokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: r.completionTokens,
          output_tokens_details: { reasoning_tokens: reasoningTokens },
          total_tokens: r.promptTokens + r.completionTokens,
        };
        state.completed_at = secs();
        if (cutShort) {
          state.status = 'incomplete';
          state.incomplete_details = { reason: 'max_output_tokens' };
        } else state.status = 'completed';
        const final = structuredClone(snapshot());
        const link: ChainLink = { id, owner, input: effective, output: builder.output as Item[] };
        if (store) {
          await insertResponse(
            db,
            { id, owner_id: owner, created_at: Date.now(), body: JSON.stringify(final) },
            effective.map((it) => ({ id: String(it.id), item: it })),
          );
        }
        cache?.set(id, link);
        yield builder.ev(cutShort ? 'response.incomplete' : 'response.completed', { response: final });
      } catch (e) {
        if (o.signal?.aborted) throw e;
        failure = e;
        state.status = 'failed';
        state.error = { code: 'server_error', message: e instanceof ServiceError ? e.message : 'the generation failed on the server' };
        state.completed_at = secs();
        yield builder.ev('response.failed', { response: structuredClone(snapshot()) });
        if (!(e instanceof ServiceError)) throw e;
      }
    }
    return { stream: body.stream === true, events: run(), failure: () => failure };
  }

  /** Runs a non-streamed response to its end; returns the final response object. */
  async complete(started: Started): Promise<Record<string, unknown>> {
    let last: Event | undefined;
    for await (const e of started.events) last = e;
    const r = (last?.response ?? {}) as Record<string, unknown>;
    // a non-streamed failure answers with its own status (the event stream could only tell it in-band)
    if (last?.type === 'response.failed') {
      throw started.failure() ??
        new ServiceError(500, 'internal_error', String((r.error as { message?: string })?.message ?? 'the response failed'));
    }
    return r;
  }

  async get(owner: string, id: string): Promise<Record<string, unknown>> {
    const row = await getResponseRow(this.db, id);
    if (!row || row.owner_id !== owner) throw notFound(`response '${id}' not found`);
    return JSON.parse(row.body);
  }

  async delete(owner: string, id: string): Promise<{ id: string; object: 'response'; deleted: true }> {
    await this.get(owner, id);
    await deleteResponseRow(this.db, id);
    return { id, object: 'response', deleted: true };
  }

  async inputItems(owner: string, id: string, q: { order: 'asc' | 'desc'; after?: string; limit: number }) {
    await this.get(owner, id);
    let after: number | undefined;
    if (q.after !== undefined) {
      const pos = await inputItemPosition(this.db, id, q.after);
      if (pos === undefined) throw bad('after', `no input item '${q.after}' in response '${id}'`);
      after = Number(pos);
    }
    const rows = await pageInputItems(this.db, id, { order: q.order, after, limit: q.limit });
    const page = rows.slice(0, q.limit).map((r) => r.item);
    return {
      object: 'list' as const,
      data: page,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: rows.length > q.limit,
    };
  }

  /**
   * Compaction: the conversation (input, after any previous response) as one `compaction` item whose
   * content is opaque to clients and expands back into the same items when sent as input.
   */
  async compact(owner: string, body: CompactBody) {
    if (!body.model) throw bad('model', 'required');
    await this.chat.resolve(body.model, 'generation');
    let prelude: Item[] = [];
    if (typeof body.previous_response_id === 'string') {
      const prev = await this.#previous(owner, body.previous_response_id);
      prelude = [...prev.input, ...prev.output];
    }
    const items = [...prelude, ...normaliseInput(body.input)];
    if (!items.length) throw bad('input', 'required');
    // checks that every item converts (files readable, types known) before it is packed
    await itemsToMessages(items, this.#resolver(owner));
    return {
      id: `cmp_${randomId(28)}`,
      object: 'response.compaction' as const,
      created_at: secs(),
      output: [{ id: itemId('cmp'), type: 'compaction', encrypted_content: encodeCompaction(items) }],
      usage: {
        input_tokens: 0,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 0,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 0,
      },
    };
  }
}

const callId = () => `call_${randomId(20)}`;

function lastUserText(items: Item[]): string {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i]!;
    if (it.type === 'message' && it.role === 'user') {
      return (it.content as { type?: string; text?: string }[]).filter((p) => p?.type === 'input_text' || p?.type === 'text').map((p) =>
        p.text ?? ''
      ).join('\n').trim();
    }
  }
  return '';
}

function responseTools(body: ResponsesBody): unknown[] {
  const tools = (body.tools as Record<string, unknown>[] | undefined) ?? [];
  return tools.map((
    t,
  ) => (t.type === 'function'
    ? { type: 'function', name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? null }
    : t)
  );
}

const COMPACTION_PREFIX = 'svc1.';

/** Compaction content: the items as base64url JSON (not encrypted: they are the caller's own conversation). */
export function encodeCompaction(items: Item[]): string {
  return COMPACTION_PREFIX + bytesToBase64Url(new TextEncoder().encode(JSON.stringify(items)));
}

export function decodeCompaction(enc: string): Item[] {
  if (!enc.startsWith(COMPACTION_PREFIX)) throw bad('input.encrypted_content', 'not a compaction made by this server');
  try {
    const bytes = decodeBase64(enc.slice(COMPACTION_PREFIX.length));
    if (!bytes) throw new Error('not base64url');
    const items = JSON.parse(new TextDecoder().decode(bytes));
    // the content comes back from the client: its items are checked as input items are
    if (!v.is(InputItems, items)) throw new Error('not a list of input items');
    return normaliseInput(items);
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw bad('input.encrypted_content', 'corrupt compaction content');
  }
}
