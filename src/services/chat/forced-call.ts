/**
 * A forced tool call (tool_choice naming a tool, or "required"/"any"): the output is constrained to a call
 * in the model's own tool-call form, and parsed back here.
 */
import type { ProcessorContext } from '../inference/generate.ts';
import { prepareConstraint, type PreparedConstraint, type ToolSpec } from '../inference/structured/index.ts';
import { type ParsedToolCall, type ToolFormat, toolFormatOf, toToolCall } from './tool-calls.ts';

/**
 * The grammar follows the model's own tool-call form, known once the model is loaded: per generation, the
 * form read from the loaded model's template and its constraint (prepared once per form).
 */
export function forcedCallConstraint(tools: ToolSpec[]): (ctx: ProcessorContext) => { format: ToolFormat; constraint: PreparedConstraint } {
  const byFormat = new Map<ToolFormat, PreparedConstraint>();
  return (ctx) => {
    const tpl = ctx.model.tokenizer.chat_template;
    const format = toolFormatOf(typeof tpl === 'string' ? tpl : JSON.stringify(tpl ?? ''));
    let constraint = byFormat.get(format);
    if (!constraint) byFormat.set(format, constraint = prepareConstraint({ type: 'tool_call', format, tools }));
    return { format, constraint };
  };
}

/** The text of a forced call (constrained, so it parses): `<tool_call>\n{...}\n</tool_call>` or bare JSON. */
export function forcedCall(text: string, format: ToolFormat): ParsedToolCall {
  const json = format === 'hermes' ? text.trim().replace(/^<tool_call>/, '').replace(/<\/tool_call>$/, '') : text;
  const call = toToolCall(JSON.parse(json));
  if (!call) throw new Error('constrained tool call did not parse');
  return call;
}
