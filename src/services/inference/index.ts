/** Public surface of the inference service. */
export { initBackend, type BackendSetting, type BackendRuntime, type Device, type OrtPackage } from './backend.ts';
export { loadModel, type LoadedModel, type LoadOptions, type Task } from './load.ts';
export { availableDtypes, modelSizeBytes, readPooling, onnxFileName, type Dtype, type PoolingConfig } from './model-files.ts';
export { renderChatPrompt, type ChatInput, type ChatMessage } from './chat-prompt.ts';
export { generateText, type GenerateOptions, type GenerationInput, type GenerationResult, type TextGeneration, type FinishReason } from './generate.ts';
export { embedTexts, chunkTokenIds, meanPoolNormalize, type EmbedOptions, type EmbedResult } from './embed.ts';
export { scorePairs, type PairScore } from './rerank.ts';
export { createSlots, type Slots, type SaturationPolicy } from './slots.ts';
export { parseKeepAlive } from './keep-alive.ts';
export { createResidency, defaultLoader, type Residency, type ResidencySettings, type ModelSpec, type ResidentInfo, type Lease } from './residency.ts';
export { createInferenceEngine, type InferenceEngine, type EngineSettings } from './engine.ts';
export type { LogitsProcessorLike } from './sampling.ts';
