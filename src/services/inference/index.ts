/** Public surface of the inference service. */
export { type BackendRuntime, type BackendSetting, type Device, initBackend, type OrtPackage } from './backend.ts';
export { type LoadedModel, loadModel, type LoadOptions, type Task } from './load.ts';
export { availableDtypes, type Dtype, modelSizeBytes, onnxFileName, type PoolingConfig, readPooling } from './model-files.ts';
export { type ChatInput, type ChatMessage, renderChatPrompt } from './chat-prompt.ts';
export {
  type FinishReason,
  type GenerateOptions,
  generateText,
  type GenerationInput,
  type GenerationResult,
  type TextGeneration,
} from './generate.ts';
export { chunkTokenIds, type EmbedOptions, type EmbedResult, embedTexts, meanPoolNormalize } from './embed.ts';
export { type PairScore, scorePairs } from './rerank.ts';
export { createSlots, type SaturationPolicy, type Slots } from './slots.ts';
export { parseKeepAlive } from './keep-alive.ts';
export {
  createResidency,
  defaultLoader,
  type Lease,
  type ModelSpec,
  type Residency,
  type ResidencySettings,
  type ResidentInfo,
} from './residency.ts';
export { createInferenceEngine, type EngineSettings, type InferenceEngine } from './engine.ts';
export type { LogitsProcessorLike } from './sampling.ts';
