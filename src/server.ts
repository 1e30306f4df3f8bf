/**
 * The composition root: opens the store and services from a config, builds the app, serves it, and runs
 * the periodic upkeep (job retention, file expiry, cross-node cancel requests). main.ts and tests use it.
 */
import { mkdir } from 'node:fs/promises';
import { type AppOptions, createApp } from './app.ts';
import { type Config, ConfigError, dbUrl, isFleetMember, isLoopbackHost, keysRequiredByConfig, modelsDir, uploadsDir } from './config.ts';
import type { Deps } from './deps.ts';
import { createLogger, type Logger } from './log.ts';
import { unrefTimer } from './runtime/env.ts';
import { type RunningServer, serve } from './runtime/serve.ts';
import { AdminSettings } from './services/admin/settings.ts';
import { AdminConsole } from './services/admin/console.ts';
import { FileStore } from './services/files/file-store.ts';
import { JobRecords } from './services/jobs/job-records.ts';
import { TaskRunner } from './services/jobs/task-runner.ts';
import { KeyService } from './services/keys/api-keys.ts';
import { ModelServices } from './services/models/model-services.ts';
import { residencyUsage } from './services/models/usage.ts';
import { createInferenceEngine } from './services/inference/engine.ts';
import { formatConstraint } from './services/chat/format-constraint.ts';
import { loggingLoader } from './services/inference/logging-loader.ts';
import { ChatService } from './services/chat/chat-service.ts';
import { TrainingService } from './services/training/training-service.ts';
import { TextService } from './services/text/text-service.ts';
import { modelStoreRoot } from './services/models/work-dir.ts';
import { openStore } from './store/db.ts';
import { setLimits } from './services/limits.ts';
import { closeWorkers, configureWorkers } from './services/workers/index.ts';
import { AgentService } from './services/agents/agent-service.ts';
import { MediaService } from './services/media/media-service.ts';
import { TranscriptionService } from './services/media/transcription.ts';
import { RetrievalEngine } from './services/retrieval/engine.ts';
import { VectorStores } from './services/retrieval/vector-stores.ts';
import { ToolEgress } from './services/tools/egress-fetch.ts';
import { McpServers } from './services/tools/mcp-client.ts';
import { ServerToolCatalog } from './services/tools/server-tools.ts';
import { MemoryService } from './services/agents/memory-service.ts';
import { AgentTurns } from './services/agents/agent-turn.ts';
import { ResponsesService } from './services/responses/responses-service.ts';
import { loadNodeTag } from './store/node-tag.ts';
import { createSearch } from './services/search/index.ts';
import { FleetMembership } from './services/fleet/membership.ts';

export interface Services extends Deps {
  close(): Promise<void>;
}

/** Opens everything the app needs, without listening. */
export async function openServices(config: Config, log: Logger = createLogger(config.logLevel)): Promise<Services> {
  if (isFleetMember(config) && config.fleetNodeTimeoutSeconds < 2 * config.fleetHeartbeatSeconds) {
    // Closer than two beats, one late heartbeat would have a live node's jobs failed by the others.
    throw new ConfigError(
      `fleet-node-timeout-seconds (${config.fleetNodeTimeoutSeconds}) must be at least twice fleet-heartbeat-seconds (${config.fleetHeartbeatSeconds})`,
    );
  }
  await mkdir(config.dataDir, { recursive: true });
  setLimits(limitsOf(config));
  configureWorkers({
    size: config.workers,
    maxHeapMb: config.workerHeapMb,
    recycleBytes: config.workerRecycleMb * 1024 * 1024,
    nice: config.workerNice,
  });
  const nodeTag = await loadNodeTag(config.dataDir, config.nodeTag);
  const store = await openStore(dbUrl(config), config.databaseAuthToken);
  const db = store.db;
  const keys = new KeyService(db, keysRequiredByConfig(config));
  if (!isLoopbackHost(config.host) && config.allowAnonymousRemote) {
    log.warn(
      `listening on ${config.host} without required keys (--allow-anonymous-remote): anyone who reaches it can use it; anonymous callers are not admins`,
    );
  }
  const files = new FileStore(db, uploadsDir(config), config.fileRetentionSeconds, isFleetMember(config) ? nodeTag : '');
  await files.init();
  const adminSettings = new AdminSettings(db, config.defaultEmbeddingModel);
  const fleet = isFleetMember(config)
    ? new FleetMembership({
      db,
      nodeTag,
      log,
      heartbeatSeconds: config.fleetHeartbeatSeconds,
      nodeTimeoutSeconds: config.fleetNodeTimeoutSeconds,
    })
    : undefined;
  const runner = new TaskRunner({
    db,
    nodeTag,
    files,
    log,
    maxJobsPerOwner: config.maxJobsPerOwner,
    syncTimeoutSeconds: () => adminSettings.syncTimeoutSeconds(),
    liveNodes: fleet && (() => fleet.liveCount()),
  });
  const lost = await runner.recoverLostJobs();
  if (lost) log.warn(`${lost} job(s) of this node were still processing at the last stop: marked failed (job_lost)`);
  const orphans = await files.sweepOrphanInputs();
  if (orphans) log.warn(`${orphans} inline task input(s) left by the last stop were removed`);
  await fleet?.beat();
  const jobs = new JobRecords(db, runner, nodeTag, config.jobRetentionSeconds, fleet && ((tag) => fleet.isLive(tag)));
  const modelRoot = await modelStoreRoot(modelsDir(config), config.modelWorkDir);
  if (modelRoot.usingWorkDir) {
    log.warn(
      `model directory ${
        modelsDir(config)
      } is read-only: models run from the work directory ${modelRoot.root} (${modelRoot.mirrored} file(s) mirrored)`,
    );
  }
  const models = new ModelServices({ modelsDir: modelRoot.root, hubBaseUrl: config.hubUrl, allowedHosts: config.hubAllowedHosts });
  // Cheap to construct: ONNX Runtime and transformers.js are imported when the first model loads (logged there).
  const engine = createInferenceEngine(config, loggingLoader(config, log));
  models.usage = residencyUsage(engine.residency);
  const chat = new ChatService({ models, engine, constrain: formatConstraint, imageHosts: config.chatImageAllowedHosts });
  const media = new MediaService({ ffmpegPath: config.ffmpegPath, wasm: config.ffmpegWasm });
  const transcription = new TranscriptionService({ media, chat, engine });
  const training = new TrainingService({ chat, models, memoryWaitSeconds: config.trainingMemoryWaitSeconds });
  const adminConsole = new AdminConsole({ db, keys, log, config, runner, engine, nodeTag });
  const agents = new AgentService(db);
  const text = new TextService({ chat, models, training, defaultModel: config.textModel });
  const retrieval = new RetrievalEngine(
    db,
    async (model, texts, signal) => (await chat.embed(model, texts, { signal })).vectors.map((v) => Float32Array.from(v)),
  );
  const vectorStores = new VectorStores(db, files, retrieval, () => adminSettings.defaultEmbeddingModel(), log);
  const responses = new ResponsesService(db, chat, files, vectorStores);
  const search = createSearch({
    db,
    chat,
    engine,
    embedder: async (model, texts, signal) => (await chat.embed(model, texts, { signal })).vectors.map((v) => Float32Array.from(v)),
    defaultEmbeddingModel: () => adminSettings.defaultEmbeddingModel(),
  });
  const toolEgress = new ToolEgress(config.toolAllowedHosts);
  const memory = new MemoryService(db, retrieval, () => adminSettings.defaultEmbeddingModel());
  const turns = new AgentTurns(chat, new ServerToolCatalog(toolEgress, new McpServers(config.mcpServers, toolEgress)), memory);

  let ticks = 0;
  const upkeep = setInterval(() => {
    ticks++;
    void runner.pollCancelRequests().catch((e) => log.error('cancel requests', e));
    if (fleet && ticks % config.fleetHeartbeatSeconds === 0) fleet.tick();
    if (ticks % 60 === 0) void Promise.all([jobs.sweep(), files.sweep()]).catch((e) => log.error('retention sweep', e));
  }, 1000);
  unrefTimer(upkeep);

  return {
    config,
    store,
    nodeTag,
    fleet,
    log,
    keys,
    files,
    runner,
    jobs,
    adminSettings,
    models,
    engine,
    chat,
    media,
    training,
    adminConsole,
    agents,
    text,
    transcription,
    vectorStores,
    responses,
    turns,
    memory,
    search,
    close: async () => {
      clearInterval(upkeep);
      await fleet?.stop();
      await vectorStores.close();
      await search.close();
      await models.close();
      await engine.close();
      await closeWorkers();
      await store.close();
    },
  };
}

const limitsOf = (c: Config) => ({
  maxImagePixels: c.maxImagePixels,
  maxPdfStreamBytes: c.maxPdfStreamBytes,
  maxPdfDecompressedBytes: c.maxPdfDecompressedBytes,
  maxPages: c.maxPages,
  maxFieldChars: c.maxFieldChars,
  maxJsonDepth: c.maxJsonDepth,
  maxPromptChars: c.maxPromptChars,
  taskDeadlineMs: c.taskDeadlineSeconds * 1000,
});

export interface StartedServer extends Services {
  server: RunningServer;
  url: string;
  stop(): Promise<void>;
}

export async function startServer(config: Config, opts?: AppOptions): Promise<StartedServer> {
  const s = await openServices(config);
  const app = createApp(s, opts);
  const server = await serve(app.fetch, { port: config.port, hostname: config.host });
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    ...s,
    server,
    url: `http://${host}:${server.port}`,
    async stop() {
      await server.close(); // finishes in-flight requests first
      await s.close();
    },
  };
}
