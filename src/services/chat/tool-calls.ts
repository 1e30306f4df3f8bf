/**
 * Tool-call conventions, as a model's chat template implies them, and parsing of one call's text.
 *
 *  hermes   Qwen2.5/Qwen3/Hermes: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, any number
 *  mistral  Mistral: `[TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]` to the end of the output
 *  json     Llama 3.x: the whole output is `{"name": ..., "parameters": {...}}` (optionally after
 *           `<|python_tag|>`), or an array of such objects
 */

export type ToolFormat = 'hermes' | 'mistral' | 'json';

export interface ParsedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** The convention a chat template teaches its model; hermes when the template names none. */
export function toolFormatOf(template: string): ToolFormat {
  if (template.includes('<tool_call>')) return 'hermes';
  if (template.includes('[TOOL_CALLS]')) return 'mistral';
  if (template.includes('<|python_tag|>') || /"parameters"|\bparameters\b.*\bname\b/s.test(template)) return 'json';
  return 'hermes';
}

/** One call object (`{name, arguments|parameters}`; `{function: {...}}` accepted too), or undefined. */
export function toToolCall(v: unknown): ParsedToolCall | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  let o = v as Record<string, unknown>;
  if (o.function && typeof o.function === 'object') o = o.function as Record<string, unknown>;
  if (typeof o.name !== 'string' || !o.name) return undefined;
  let args = o.arguments ?? o.parameters ?? {};
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return undefined;
    }
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) return undefined;
  return { name: o.name, arguments: args as Record<string, unknown> };
}

/** Text holding one call object or an array of them; undefined when it is not that (then it is content). */
export function parseToolCallText(text: string): ParsedToolCall[] | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text.trim());
  } catch {
    return undefined;
  }
  const list = Array.isArray(v) ? v : [v];
  const calls = list.map(toToolCall);
  if (calls.length === 0 || calls.some((c) => !c)) return undefined;
  return calls as ParsedToolCall[];
}
