/**
 * Dialect B answer objects for chat and generate: stream lines, the final object with Ollama's duration
 * fields (nanoseconds), preload/unload answers, and how shared request fields map to the chat service.
 */
import type { ChatResult, OutputDelta, OutputFormat, ParsedToolCall } from '../../services/chat/index.ts';

/** `"json"`, a JSON schema (validated by the body schema), or nothing (`""` too). */
export const formatOf = (f: string | Record<string, unknown> | undefined): OutputFormat | undefined =>
  f === undefined || f === '' ? undefined : f === 'json' ? 'json' : (f as Record<string, unknown>);

/** `think`: a boolean, or an effort level ("high", "medium", "low"), which turns thinking on. */
export const thinkOf = (t: boolean | string | undefined): boolean | undefined => (typeof t === 'string' ? t !== 'false' && t !== '' : t);

const createdAt = () => new Date().toISOString();

/** Ollama's logprobs (a boolean) and top_logprobs (0–20, implies logprobs) → alternatives per token. */
export function logprobsOf(b: { logprobs?: boolean; top_logprobs?: number }): number | undefined {
  if (b.logprobs === true || (b.top_logprobs !== undefined && b.top_logprobs > 0)) return b.top_logprobs ?? 0;
  return undefined;
}

type Lp = NonNullable<ChatResult['logprobs']>;
const lpField = (
  lps: Lp | undefined,
) => (lps?.length ? { logprobs: lps.map((t) => ({ ...t, top_logprobs: t.top_logprobs.length ? t.top_logprobs : undefined })) } : {});

export const toolCallsOut = (calls: ParsedToolCall[]) =>
  calls.map((c, index) => ({ function: { index, name: c.name, arguments: c.arguments } }));

function assistantMessage(d: { content: string; thinking: string; toolCalls: ParsedToolCall[] }) {
  return {
    role: 'assistant',
    content: d.content,
    ...(d.thinking ? { thinking: d.thinking } : {}),
    ...(d.toolCalls.length ? { tool_calls: toolCallsOut(d.toolCalls) } : {}),
  };
}

export function finalFields(r: ChatResult) {
  return {
    done: true,
    done_reason: r.finishReason,
    total_duration: r.timings.totalNs,
    load_duration: r.timings.loadNs,
    prompt_eval_count: r.promptTokens,
    prompt_eval_duration: r.timings.promptEvalNs,
    eval_count: r.completionTokens,
    eval_duration: r.timings.evalNs,
  };
}

export const chatLine = (model: string, d: OutputDelta, lps?: Lp) => ({
  model,
  created_at: createdAt(),
  message: assistantMessage(d),
  ...lpField(lps),
  done: false,
});
export const chatFinal = (r: ChatResult, whole: boolean, lps?: Lp) => ({
  model: r.model,
  created_at: createdAt(),
  message: whole ? assistantMessage(r.message) : { role: 'assistant', content: '' },
  ...lpField(whole ? r.logprobs : lps),
  ...finalFields(r),
});

/** Generate carries thinking beside `response`; tool calls cannot be asked for there. */
export const generateLine = (model: string, d: OutputDelta, lps?: Lp) => ({
  model,
  created_at: createdAt(),
  response: d.content,
  ...(d.thinking ? { thinking: d.thinking } : {}),
  ...lpField(lps),
  done: false,
});
export const generateFinal = (r: ChatResult, whole: boolean, lps?: Lp) => ({
  model: r.model,
  created_at: createdAt(),
  response: whole ? r.message.content : '',
  ...(whole && r.message.thinking ? { thinking: r.message.thinking } : {}),
  ...lpField(whole ? r.logprobs : lps),
  ...finalFields(r),
});

/** An empty chat/generate: the model was loaded or unloaded, nothing generated. */
export const preloadAnswer = (p: { model: string; action: 'load' | 'unload' }, route: 'chat' | 'generate') => ({
  model: p.model,
  created_at: createdAt(),
  ...(route === 'chat' ? { message: { role: 'assistant', content: '' } } : { response: '' }),
  done: true,
  done_reason: p.action,
});

/** Stream lines: one per delta, then the final object. */
export async function* streamLines(
  s: AsyncIterable<OutputDelta> & { model: string; result: Promise<ChatResult>; takeLogprobs(): Lp },
  route: 'chat' | 'generate',
) {
  for await (const d of s) yield route === 'chat' ? chatLine(s.model, d, s.takeLogprobs()) : generateLine(s.model, d, s.takeLogprobs());
  const r = await s.result;
  yield route === 'chat' ? chatFinal(r, false, s.takeLogprobs()) : generateFinal(r, false, s.takeLogprobs());
}
