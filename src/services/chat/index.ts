/** Public surface of the chat service (shared by the Ollama and OpenAI dialects). */
export {
  type ChatMessageIn,
  type ChatRequest,
  type ChatResult,
  ChatService,
  type ChatStream,
  type FormatConstraint,
  opensThinking,
  type OutputFormat,
  type ResolvedChatModel,
  templateMessages,
} from './chat-service.ts';
export { createOutputParser, type OutputDelta, type OutputParser, type OutputParserOptions } from './output-parser.ts';
export { fromGenerationConfig, fromOllamaOptions, type GenerationParams, mergeParams } from './params.ts';
export { type ParsedToolCall, parseToolCallText, type ToolFormat, toolFormatOf } from './tool-calls.ts';
export { truncateEmbedding } from './openai-completions.ts';
