/** Everything the app needs, opened once by server.ts (the composition root). */
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import type { AdminSettings } from './services/admin/settings.ts';
import type { AdminConsole } from './services/admin/console.ts';
import type { FileStore } from './services/files/file-store.ts';
import type { JobRecords } from './services/jobs/job-records.ts';
import type { TaskRunner } from './services/jobs/task-runner.ts';
import type { KeyService } from './services/keys/api-keys.ts';
import type { ChatService } from './services/chat/chat-service.ts';
import type { TrainingService } from './services/training/training-service.ts';
import type { InferenceEngine } from './services/inference/engine.ts';
import type { ModelServices } from './services/models/model-services.ts';
import type { OpenedStore } from './store/db.ts';
import type { MediaService } from './services/media/media-service.ts';
import type { AgentService } from './services/agents/agent-service.ts';
import type { TranscriptionService } from './services/media/transcription.ts';
import type { TextService } from './services/text/text-service.ts';
import type { ResponsesService } from './services/responses/responses-service.ts';
import type { AgentTurns } from './services/agents/agent-turn.ts';
import type { MemoryService } from './services/agents/memory-service.ts';
import type { VectorStores } from './services/retrieval/vector-stores.ts';
import type { Search } from './services/search/index.ts';

export interface Deps {
  config: Config;
  store: OpenedStore;
  nodeTag: string;
  log: Logger;
  keys: KeyService;
  files: FileStore;
  runner: TaskRunner;
  jobs: JobRecords;
  adminSettings: AdminSettings;
  /** Catalog, pulls, blobs, create/copy/delete/show (src/services/models/). */
  models: ModelServices;
  /** Inference engine (src/services/inference/): residency, slots, generate/embed/rerank. Its backend binds on the first model load. */
  engine: InferenceEngine;
  /** Chat/generate/embed over the engine for both dialects: templates, profiles, tool calls, thinking (src/services/chat/). */
  chat: ChatService;
  /** Audio/video decoding, voice activity detection, video frames (src/services/media/). */
  media: MediaService;
  /** Whisper transcription and translation, chunked at VAD silences (src/services/media/transcription.ts). */
  transcription: TranscriptionService;
  /** Training jobs (classifier heads over embeddings) and classify (src/services/training/). */
  training: TrainingService;
  /** Admin console: area tickets, two-factor sign-in, dashboard, recent errors (src/services/admin/). */
  adminConsole: AdminConsole;
  /** Agents and versioned skills per key, applied to chat requests (src/services/agents/). */
  agents: AgentService;
  /** Text tasks: summarise, translate, rewrite, correct, analyse, extract (src/services/text/). */
  text: TextService;
  /** Vector stores over the retrieval engine (src/services/retrieval/). */
  vectorStores: VectorStores;
  /** The Responses API with stored responses (src/services/responses/). */
  responses: ResponsesService;
  /** Search clusters, tenants, collections, queries, rerank and chat with documents (src/services/search/). */
  search: Search;
  /** Chat turns with server tools and memory; memory stores per key (src/services/agents/). */
  turns: AgentTurns;
  memory: MemoryService;
  /** Fleet membership (heartbeats, live nodes); absent on a node that is not a fleet member. */
  fleet?: import('./services/fleet/membership.ts').FleetMembership;
}
