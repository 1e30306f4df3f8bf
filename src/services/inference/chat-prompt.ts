/** Render a chat with the model's own template (tools and thinking flags passed straight through). */
import type { PreTrainedTokenizer } from '@huggingface/transformers';

export interface ChatMessage {
  role: string;
  content?: string | null;
  [key: string]: unknown;
}

export interface ChatInput {
  messages: ChatMessage[];
  /** OpenAI-style tool definitions; the template decides how they appear. */
  tools?: unknown[];
  /** Qwen3-style thinking switch; left out of the template context when undefined. */
  enableThinking?: boolean;
  /** Any other template variables (e.g. documents, reasoning effort). */
  templateKwargs?: Record<string, unknown>;
  addGenerationPrompt?: boolean;
  /**
   * Decoded images (RGBA), in the order of the image parts in `messages` (`{type: 'image'}` content parts,
   * which the template turns into the model's image placeholders). Vision models only.
   */
  images?: { data: Uint8ClampedArray; width: number; height: number }[];
}

export function renderChatPrompt(tokenizer: PreTrainedTokenizer, input: ChatInput): string {
  const kwargs: Record<string, unknown> = { ...input.templateKwargs };
  if (input.enableThinking !== undefined) kwargs.enable_thinking = input.enableThinking;
  const out = tokenizer.apply_chat_template(input.messages as never, {
    tools: input.tools?.length ? (input.tools as never) : null,
    add_generation_prompt: input.addGenerationPrompt ?? true,
    tokenize: false,
    ...kwargs,
  } as never);
  return out as unknown as string;
}
