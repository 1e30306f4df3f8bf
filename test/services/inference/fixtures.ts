/** Paths of the generated tiny models (scripts/models/gen-tiny-models.py), and the engine settings tests start from. */
import { fileURLToPath } from 'node:url';
import type { EngineSettings } from '../../../src/services/inference/engine.ts';

const root = fileURLToPath(new URL('../../fixtures/models/', import.meta.url));
export const TINY_LLAMA = `${root}tiny-llama`;
export const TINY_EMBED = `${root}tiny-bert-embed`;
export const TINY_RERANKER = `${root}tiny-bert-reranker`;

/** One thread, CPU, three models resident at most, no memory budget, one slot a model, queue when busy. */
export const TEST_ENGINE: EngineSettings = {
  backend: 'cpu',
  threads: 1,
  maxLoadedModels: 3,
  memoryBudgetBytes: 0,
  slotsPerModel: 1,
  saturationPolicy: 'Queue',
  keepAliveSeconds: 300,
  idleDeviceMemoryReleaseSeconds: 300,
};
