/**
 * A Responses API request, validated by its schema (src/schemas/responses.ts), → the pieces the service
 * runs: input items normalised (ids given), items turned into chat messages (files read and their text folded
 * in), and the equivalent chat completion body that the chat planner validates and constrains (tools,
 * tool_choice, text.format, sampling).
 */
import { randomId } from '../../ids.ts';
import type { ContentPart, FileSearchToolBody, FunctionToolBody, InputItem, ResponsesBody } from '../../schemas/responses.ts';
import { ServiceError } from '../errors.ts';
import type { AttributeFilter } from '../retrieval/attribute-filter.ts';

export type Item = Record<string, unknown> & { type: string; id?: string };

export const bad = (field: string, message: string, reason = 'invalid_request') =>
  new ServiceError(400, reason, `${field}: ${message}`, { details: [{ field, message }] });

export const itemId = (prefix: string) => `${prefix}_${randomId(24)}`;

/** The request's input (validated by its schema) as items with ids (a string is one user message). */
export function normaliseInput(input: string | InputItem[] | null | undefined): Item[] {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') {
    return [{ id: itemId('msg'), type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  }
  return input.map((it) => {
    const type = it.type ?? 'message';
    const id = typeof it.id === 'string' ? it.id : undefined;
    switch (type) {
      case 'message': {
        const content = typeof it.content === 'string'
          ? [{ type: it.role === 'assistant' ? 'output_text' : 'input_text', text: it.content }]
          : it.content;
        return { ...it, type: 'message', id: id ?? itemId('msg'), content };
      }
      case 'function_call':
        return {
          ...it,
          type,
          id: id ?? itemId('fc'),
          arguments: typeof it.arguments === 'string' ? it.arguments : JSON.stringify(it.arguments ?? {}),
        };
      case 'function_call_output':
        return { ...it, type, id: id ?? itemId('fco') };
      default: // reasoning, file_search_call, compaction
        return { ...it, type, id: id ?? itemId(type === 'reasoning' ? 'rs' : type === 'compaction' ? 'cmp' : 'fs') };
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

async function contentParts(item: Item, r: ItemResolver): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const p of item.content as ContentPart[]) {
    switch (p.type) {
      case 'refusal':
        out.push(textPart(String(p.refusal ?? '')));
        break;
      case 'input_image': {
        const url = typeof p.image_url === 'string' ? p.image_url : await r.imageDataUrl(p.file_id as string);
        out.push({ type: 'image_url', image_url: { url } });
        break;
      }
      case 'input_file': {
        const f = typeof p.file_id === 'string'
          ? await r.fileText(p.file_id)
          : await r.inlineFileText(typeof p.filename === 'string' ? p.filename : 'file', p.file_data as string);
        out.push(textPart(fileBlock(f)));
        break;
      }
      default: // input_text, output_text, text, summary_text
        out.push(textPart(p.text as string));
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
  for (const it of expanded) {
    if (it.type === 'reasoning') {
      const parts = [
        ...((it.content as { text?: string }[] | undefined) ?? []),
        ...((it.summary as { text?: string }[] | undefined) ?? []),
      ];
      reasoning += parts.map((p) => p?.text ?? '').join('\n');
    } else if (it.type === 'message') {
      const role = it.role === 'developer' ? 'system' : String(it.role);
      const parts = await contentParts(it, r);
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
export function chatTools(body: ResponsesBody): { tools?: unknown[]; tool_choice?: unknown; fileSearch?: FileSearchTool } {
  let fileSearch: FileSearchTool | undefined;
  const fns: unknown[] = [];
  for (const t of (body.tools ?? []) as (FileSearchToolBody | FunctionToolBody)[]) {
    if (t.type === 'file_search') {
      fileSearch = {
        vector_store_ids: t.vector_store_ids,
        max_num_results: t.max_num_results ?? 10,
        ...(t.filters ? { filters: t.filters } : {}),
      };
      continue;
    }
    fns.push({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters ?? { type: 'object', properties: {} } },
    });
  }
  let choice: unknown = body.tool_choice;
  if (choice && typeof choice === 'object') {
    const c = choice as { type: string; name?: unknown };
    if (c.type === 'function') choice = { type: 'function', function: { name: c.name } };
    else choice = fns.length ? 'auto' : undefined; // file_search: the search always runs
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
export function responseFormat(body: ResponsesBody): unknown {
  const f = body.text?.format;
  if (!f || f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: f.name ?? 'output', schema: f.schema, strict: f.strict } };
}
