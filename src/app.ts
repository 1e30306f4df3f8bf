/** createApp(deps): middleware and the three route families mounted. */
import { Hono } from 'hono';
import type { Deps } from './deps.ts';
import { auth } from './http/auth.ts';
import { areaTicketAuth } from './http/area-ticket.ts';
import { securityHeaders } from './http/security-headers.ts';
import { bodyLimit } from './http/body-limit.ts';
import type { AppEnv } from './http/context.ts';
import { toErrorResponse } from './http/errors.ts';
import { requestMeta } from './http/request-meta.ts';
import { embeddedPublic } from './runtime/embedded.ts';
import { findPublicDir, serveStatic } from './http/static.ts';
import { serveVendor } from './http/vendor.ts';
import { openaiFileRoutes } from './routes/openai/files.ts';
import { anthropicMessageRoutes } from './routes/anthropic/messages.ts';
import { anthropicModelRoutes } from './routes/anthropic/models.ts';
import { versionRoutes } from './routes/ollama/version.ts';
import { ollamaBlobRoutes } from './routes/ollama/blobs.ts';
import { ollamaCreateRoutes } from './routes/ollama/create.ts';
import { ollamaModelRoutes } from './routes/ollama/models.ts';
import { ollamaChatRoutes } from './routes/ollama/chat.ts';
import { ollamaEmbedRoutes } from './routes/ollama/embed.ts';
import { ollamaPsRoutes } from './routes/ollama/ps.ts';
import { adminMemoryRoutes } from './routes/svc/admin-memory.ts';
import { ollamaPullRoutes } from './routes/ollama/pull.ts';
import { openaiModelRoutes } from './routes/openai/models.ts';
import { openaiChatRoutes } from './routes/openai/chat.ts';
import { openaiCompletionRoutes } from './routes/openai/completions.ts';
import { openaiEmbeddingRoutes } from './routes/openai/embeddings.ts';
import { openaiAudioRoutes } from './routes/openai/audio.ts';
import { openaiResponsesRoutes } from './routes/openai/responses.ts';
import { openaiVectorStoreRoutes } from './routes/openai/vector-stores.ts';
import { rootRoutes } from './routes/root.ts';
import { adminJobRoutes } from './routes/svc/admin-jobs.ts';
import { adminKeyRoutes } from './routes/svc/admin-keys.ts';
import { adminSettingsRoutes } from './routes/svc/admin-settings.ts';
import { adminConsoleRoutes } from './routes/svc/admin-console.ts';
import { pdfRoutes } from './routes/svc/pdf/index.ts';
import { pdfTrustRoutes } from './routes/svc/pdf/trust.ts';
import { documentRoutes } from './routes/svc/documents/index.ts';
import { imageRoutes } from './routes/svc/images/index.ts';
import { fileRoutes } from './routes/svc/files.ts';
import { mediaRoutes } from './routes/svc/media/index.ts';
import { jobRoutes } from './routes/svc/jobs.ts';
import { modelFileRoutes } from './routes/svc/model-files.ts';
import { trainingRoutes } from './routes/svc/training.ts';
import { textRoutes } from './routes/svc/text/index.ts';
import { mcpRoutes, skillPrompts } from './routes/mcp/index.ts';
import { agentRoutes } from './routes/svc/agents.ts';
import { ServiceError } from './services/errors.ts';

export interface AppOptions {
  /** Extra routes mounted before the 404 (tests register test-only tasks here; never exposed by the server). */
  extraRoutes?: (app: Hono<AppEnv>, deps: Deps) => void;
}

export function createApp(deps: Deps, opts: AppOptions = {}): Hono<AppEnv> {
  const { config, nodeTag, keys, log } = deps;
  const app = new Hono<AppEnv>();
  const publicDir = findPublicDir();

  app.use('*', requestMeta(nodeTag, log));
  app.use('*', areaTicketAuth(deps.adminConsole.tickets));
  app.use('*', auth(keys));
  app.use('*', bodyLimit(config.maxUploadBytes));

  app.route('/', rootRoutes(nodeTag, publicDir !== null || '/index.html' in embeddedPublic));
  // Anthropic Messages gateway (its /v1/models answers only with anthropic-version, so it comes first)
  app.route('/', anthropicModelRoutes(deps.models));
  app.route('/', anthropicMessageRoutes(deps.chat, deps.log));
  // dialect A
  app.route('/', openaiFileRoutes(deps.files));
  app.route('/', openaiModelRoutes(deps.models));
  app.route('/', openaiChatRoutes(deps.chat, log, deps.agents));
  app.route('/', openaiCompletionRoutes(deps.chat, deps.engine, log));
  app.route('/', openaiEmbeddingRoutes(deps.chat, deps.runner));
  app.route('/', openaiAudioRoutes(deps));
  app.route('/', openaiResponsesRoutes(deps.responses, log));
  app.route('/', openaiVectorStoreRoutes(deps.vectorStores));
  // dialect B
  app.route('/', versionRoutes());
  app.route('/', ollamaModelRoutes(deps.models, deps.engine));
  app.route('/', ollamaChatRoutes(deps.chat, log));
  app.route('/', ollamaEmbedRoutes(deps.chat));
  app.route('/', ollamaPsRoutes(deps.engine, deps.models));
  app.route('/', ollamaPullRoutes(deps.models, log));
  app.route('/', ollamaCreateRoutes(deps.models, log));
  app.route('/', ollamaBlobRoutes(deps.models));
  // native
  app.route('/', jobRoutes(deps.jobs));
  app.route('/', modelFileRoutes(deps.models));
  app.route('/', fileRoutes(deps.files));
  app.route('/', adminKeyRoutes(keys));
  app.route('/', adminJobRoutes(deps.runner));
  app.route('/', adminSettingsRoutes(deps.adminSettings));
  app.route('/', adminMemoryRoutes(deps.engine));
  app.route('/', adminConsoleRoutes(deps.adminConsole));
  app.route('/', pdfRoutes(deps));
  app.route('/', pdfTrustRoutes(deps));
  app.route('/', documentRoutes(deps));
  app.route('/', mediaRoutes(deps));
  app.route('/', trainingRoutes(deps));
  app.route('/', textRoutes(deps));
  app.route('/', imageRoutes(deps));
  app.route('/', agentRoutes(deps.agents));
  // the tool-protocol server: its tools call the routes above in-process, under the caller's key
  app.route('/', mcpRoutes((path, init) => Promise.resolve(app.request(path, init)), (owner) => skillPrompts(deps.agents, owner.id)));
  opts.extraRoutes?.(app, deps);
  app.use('*', securityHeaders());
  app.use('*', serveStatic(publicDir, embeddedPublic));
  app.use('/vendor/*', serveVendor());

  app.notFound((c) => toErrorResponse(new ServiceError(404, 'not_found', `route ${c.req.method} ${c.req.path} not found`), c, log.error));
  app.onError((err, c) => toErrorResponse(err, c, (m, e) => log.error(m, e)));
  return app;
}
