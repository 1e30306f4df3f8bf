/**
 * A Responses API request → the pieces the service runs: refusals by name, input items normalised (ids
 * given, `item_reference` refused), items turned into chat messages (files read and their text folded
 * in), and the equivalent chat completion body that the chat planner validates and constrains (tools,
 * tool_choice, text.format, sampling).
 */
import { randomId } from '../../ids.ts';
import * as v from 'valibot';
import { ServiceError } from '../errors.ts';
import { type AttributeFilter, AttributeFilterSchema } from '../retrieval/attribute-filter.ts';

type Body = Record<string, unknown>;
export type Item = Record<string, unknown> & { type: string; id?: string };

export const bad = (field: string, message: string, reason = 'invalid_request') =>
  new ServiceError(400, reason, `${field}: ${message}`, { details: [{ field, message }] });

export const itemId = (prefix: string) => `${prefix}_${randomId(24)}`;

/** Fields refused rather than misinterpreted. */
export function refuseResponseFields(body: Body): void {
  if (body.conversation !== undefined && body.conversation !== null) {
    throw bad('conversation', 'conversation objects are not supported by this server; chain turns with previous_response_id');
  }
  if (body.background === true) {
    throw bad('background', 'background execution is not supported by this server; send the request without background (or stream it)');
  }
  if (body.prompt !== undefined && body.prompt !== null) throw bad('prompt', 'reusable prompt templates are not supported by this server');
  if (body.top_logprobs !== undefined && body.top_logprobs !== null && body.top_logprobs !== 0) {
    throw bad('top_logprobs', 'log probabilities are not supported by this server');
  }
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) throw bad('tools', 'must be an array');
    body.tools.forEach((t, i) => {
      const type = (t as { type?: unknown })?.type;
      if (type !== 'function' && type !== 'file_search') {
        throw bad(`tools[${i}].type`, `hosted tool type "${String(type)}" is not supported by this server (function and file_search are)`);
      }
    });
  }
}

const MESSAGE_ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/** The request's input as items with ids (a string is one user message). */
export function normaliseInput(input: unknown): Item[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') {
    return [{ id: itemId('msg'), type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  }
  if (!Array.isArray(input)) throw bad('input', 'must be a string or an array of items');
  return input.map((raw, i) => {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw bad(`input[${i}]`, 'must be an item object');
    const it = raw as Item;
    const type = it.type ?? ('role' in it ? 'message' : undefined);
    switch (type) {
      case 'item_reference':
        throw bad(
          `input[${i}].type`,
          'item_reference is not supported by this server; send the item itself or chain with previous_response_id',
        );
      case 'message': {
        if (typeof it.role !== 'string' || !MESSAGE_ROLES.has(it.role)) {
          throw bad(`input[${i}].role`, 'must be one of user, assistant, system, developer');
        }
        const content = typeof it.content === 'string'
          ? [{ type: it.role === 'assistant' ? 'output_text' : 'input_text', text: it.content }]
          : it.content;
        if (!Array.isArray(content)) throw bad(`input[${i}].content`, 'must be a string or an array of content parts');
        return { ...it, type: 'message', id: typeof it.id === 'string' ? it.id : itemId('msg'), content };
      }
      case 'function_call':
        if (typeof it.name !== 'string' || typeof it.call_id !== 'string') {
          throw bad(`input[${i}]`, 'a function_call needs name and call_id');
        }
        return {
          ...it,
          type,
          id: typeof it.id === 'string' ? it.id : itemId('fc'),
          arguments: typeof it.arguments === 'string' ? it.arguments : JSON.stringify(it.arguments ?? {}),
        };
      case 'function_call_output':
        if (typeof it.call_id !== 'string') throw bad(`input[${i}].call_id`, 'required');
        return { ...it, type, id: typeof it.id === 'string' ? it.id : itemId('fco') };
      case 'reasoning':
      case 'file_search_call':
      case 'compaction':
        return {
          ...it,
          type,
          id: typeof it.id === 'string' ? it.id : itemId(type === 'reasoning' ? 'rs' : type === 'compaction' ? 'cmp' : 'fs'),
        };
      default:
        throw bad(`input[${i}].type`, `item type "${String(type)}" is not supported by this server`);
    }
  });
}

export interface FileText {
  filename: string;
  text: string;
}

/** Reads what items refer to: uploaded files (owner-checked) as text or as image data URLs. */
export interface ItemResolver {
  fileText(fileId: string): Promise<FileText>;
  inlineFileText(filename: string, data: string): Promise<FileText>;
  imageDataUrl(fileId: string): Promise<string>;
  /** A compaction item's items (404/400 when it is not ours). */
  expandCompaction(encrypted: string): Item[];
}

type ChatMsg = Record<string, unknown> & { role: string };

const textPart = (text: string) => ({ type: 'text', text });
const fileBlock = (f: FileText) => `[file: ${f.filename}]\n${f.text.trim()}\n[end of file: ${f.filename}]`;

async function contentParts(item: Item, i: number, r: ItemResolver): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const [j, p] of (item.content as Record<string, unknown>[]).entries()) {
    const where = `input[${i}].content[${j}]`;
    switch (p?.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
      case 'summary_text':
        if (typeof p.text !== 'string') throw bad(`${where}.text`, 'must be a string');
        out.push(textPart(p.text));
        break;
      case 'refusal':
        out.push(textPart(String(p.refusal ?? '')));
        break;
      case 'input_image': {
        const url = typeof p.image_url === 'string'
          ? p.image_url
          : typeof p.file_id === 'string'
          ? await r.imageDataUrl(p.file_id)
          : undefined;
        if (!url) throw bad(where, 'input_image needs image_url (a data URL or an http(s) URL) or file_id');
        out.push({ type: 'image_url', image_url: { url } });
        break;
      }
      case 'input_file': {
        let f: FileText;
        if (typeof p.file_id === 'string') f = await r.fileText(p.file_id);
        else if (typeof p.file_data === 'string') {
          f = await r.inlineFileText(typeof p.filename === 'string' ? p.filename : 'file', p.file_data);
        } else if (typeof p.file_url === 'string') {
          throw bad(`${where}.file_url`, 'file URLs are not fetched by this server; upload the file and pass file_id, or send file_data');
        } else throw bad(where, 'input_file needs file_id or file_data');
        out.push(textPart(fileBlock(f)));
        break;
      }
      default:
        throw bad(`${where}.type`, `content type "${String(p?.type)}" is not supported`);
    }
  }
  return out;
}

/** Items → chat messages (OpenAI chat format), in order; calls and their outputs paired by call_id. */
export async function itemsToMessages(items: Item[], r: ItemResolver): Promise<ChatMsg[]> {
  const msgs: ChatMsg[] = [];
  let reasoning = '';
  const expanded: Item[] = [];
  for (const it of items) {
    if (it.type === 'compaction') expanded.push(...r.expandCompaction(String(it.encrypted_content ?? '')));
    else expanded.push(it);
  }
  for (const [i, it] of expanded.entries()) {
    if (it.type === 'reasoning') {
      const parts = [
        ...((it.content as { text?: string }[] | undefined) ?? []),
        ...((it.summary as { text?: string }[] | undefined) ?? []),
      ];
      reasoning += parts.map((p) => p?.text ?? '').join('\n');
    } else if (it.type === 'message') {
      const role = it.role === 'developer' ? 'system' : String(it.role);
      const parts = await contentParts(it, i, r);
      const onlyText = parts.every((p) => (p as { type: string }).type === 'text');
      const content = onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts;
      const m: ChatMsg = { role, content };
      if (role === 'assistant' && reasoning) (m.reasoning_content = reasoning), (reasoning = '');
      msgs.push(m);
    } else if (it.type === 'function_call') {
      const last = msgs.at(-1);
      const call = { id: it.call_id, type: 'function', function: { name: it.name, arguments: it.arguments } };
      if (last?.role === 'assistant' && Array.isArray(last.tool_calls)) last.tool_calls.push(call);
      else {
        const m: ChatMsg = { role: 'assistant', content: '', tool_calls: [call] };
        if (reasoning) (m.reasoning_content = reasoning), (reasoning = '');
        msgs.push(m);
      }
    } else if (it.type === 'function_call_output') {
      const out = it.output;
      const text = typeof out === 'string'
        ? out
        : Array.isArray(out)
        ? out.map((p) => (p as { text?: string })?.text ?? '').join('\n')
        : JSON.stringify(out ?? '');
      msgs.push({ role: 'tool', tool_call_id: it.call_id, content: text });
    }
    // file_search_call items carry no text for the model: their results were folded in when they ran
  }
  return msgs;
}

/** Flat Responses function tools → chat tools; tool_choice likewise. */
export function chatTools(body: Body): { tools?: unknown[]; tool_choice?: unknown; fileSearch?: FileSearchTool } {
  const tools = (body.tools as Record<string, unknown>[] | undefined) ?? [];
  let fileSearch: FileSearchTool | undefined;
  const fns: unknown[] = [];
  tools.forEach((t, i) => {
    if (t.type === 'file_search') {
      const ids = t.vector_store_ids;
      if (!Array.isArray(ids) || ids.length === 0 || !ids.every((x) => typeof x === 'string')) {
        throw bad(`tools[${i}].vector_store_ids`, 'a non-empty array of vector store ids is required');
      }
      const max = t.max_num_results ?? 10;
      if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 50) {
        throw bad(`tools[${i}].max_num_results`, 'must be an integer from 1 to 50');
      }
      if (fileSearch) throw bad(`tools[${i}]`, 'only one file_search tool may be given');
      let filters: AttributeFilter | undefined;
      if (t.filters !== undefined && t.filters !== null) {
        const r = v.safeParse(AttributeFilterSchema, t.filters);
        if (!r.success) throw bad(`tools[${i}].filters`, r.issues[0].message);
        filters = r.output;
      }
      fileSearch = { vector_store_ids: ids as string[], max_num_results: max, ...(filters ? { filters } : {}) };
      return;
    }
    if (typeof t.name !== 'string' || !t.name) throw bad(`tools[${i}].name`, 'required for a function tool');
    fns.push({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters ?? { type: 'object', properties: {} } },
    });
  });
  let choice = body.tool_choice;
  if (choice && typeof choice === 'object') {
    const c = choice as { type?: string; name?: unknown };
    if (c.type === 'function') choice = { type: 'function', function: { name: c.name } };
    else if (c.type === 'file_search') choice = fns.length ? 'auto' : undefined;
    else {throw bad(
        'tool_choice',
        `type "${String(c.type)}" is not supported (use "auto", "none", "required" or {"type":"function","name":...})`,
      );}
  }
  if (!fns.length && (choice === 'auto' || choice === 'none')) choice = undefined;
  if (!fns.length && choice === 'required' && fileSearch) choice = undefined; // the search always runs; nothing else to force
  return { tools: fns.length ? fns : undefined, tool_choice: choice ?? undefined, fileSearch };
}

export interface FileSearchTool {
  vector_store_ids: string[];
  max_num_results: number;
  filters?: AttributeFilter;
}

/** text.format → chat response_format. */
export function responseFormat(body: Body): unknown {
  const text = body.text as { format?: Record<string, unknown> } | undefined | null;
  const f = text?.format;
  if (!f || f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  if (f.type === 'json_schema') {
    if (!f.schema || typeof f.schema !== 'object') throw bad('text.format.schema', 'required for type json_schema');
    return { type: 'json_schema', json_schema: { name: f.name ?? 'output', schema: f.schema, strict: f.strict } };
  }
  throw bad('text.format.type', `"${String(f.type)}" is not one of text, json_object, json_schema`);
}
