/** One instruction-following call to a chat model (plain text, or JSON held to a schema by constrained decoding). */
import type { ChatService, OutputFormat } from '../chat/chat-service.ts';

export interface GenerateText {
  model: string;
  system: string;
  user: string;
  format?: OutputFormat;
  maxTokens?: number;
  signal?: AbortSignal;
}

export async function generateText(chat: ChatService, g: GenerateText): Promise<{ model: string; text: string; finishReason: string }> {
  const stream = await chat.chat({
    model: g.model,
    messages: [{ role: 'system', content: g.system }, { role: 'user', content: g.user }],
    format: g.format,
    params: { temperature: 0, ...(g.maxTokens ? { maxTokens: g.maxTokens } : {}) },
    think: undefined,
    signal: g.signal,
    raw: g.format === undefined ? undefined : true,
  });
  const r = await stream.complete();
  return { model: r.model, text: r.message.content.trim(), finishReason: r.finishReason };
}
