/** Public surface of the chat service (shared by the Ollama and OpenAI dialects). */
export { ChatService, opensThinking, templateMessages, type ChatMessageIn, type ChatRequest, type ChatResult, type ChatStream, type FormatConstraint, type OutputFormat, type ResolvedChatModel } from './chat-service.ts';
export { createOutputParser, type OutputDelta, type OutputParser, type OutputParserOptions } from './output-parser.ts';
export { fromGenerationConfig, fromOllamaOptions, mergeParams, type GenerationParams } from './params.ts';
export { parseToolCallText, toolFormatOf, type ParsedToolCall, type ToolFormat } from './tool-calls.ts';
export { truncateEmbedding } from './openai-completions.ts';
