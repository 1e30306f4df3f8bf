/** createApp(deps): middleware and the three route families mounted. */
import { type Context, Hono } from 'hono';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import type { Deps } from './deps.ts';
import { isLoopbackHost } from './config.ts';
import { auth } from './http/auth.ts';
import { areaTicketAuth } from './http/area-ticket.ts';
import { securityHeaders } from './http/security-headers.ts';
import { bodyLimit } from './http/body-limit.ts';
import { cors } from './http/cors.ts';
import type { AppEnv } from './http/context.ts';
import { toErrorResponse } from './http/errors.ts';
import { requestMeta } from './http/request-meta.ts';
import { OneHandlerRouter } from './http/one-handler-router.ts';
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
import { ollamaPullRoutes } from './routes/ollama/pull.ts';
import { openaiModelRoutes } from './routes/openai/models.ts';
import { openaiChatRoutes } from './routes/openai/chat.ts';
import { openaiCompletionRoutes } from './routes/openai/completions.ts';
import { openaiEmbeddingRoutes } from './routes/openai/embeddings.ts';
import { openaiAudioRoutes } from './routes/openai/audio.ts';
import { openaiResponsesRoutes } from './routes/openai/responses.ts';
import { openaiVectorStoreRoutes } from './routes/openai/vector-stores.ts';
import { rootRoutes } from './routes/root.ts';
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
import { openaiRerankRoutes, searchRoutes } from './routes/svc/search/index.ts';
import { memoryRoutes } from './routes/svc/memory.ts';
import { adminRoutes } from './routes/svc/admin.ts';
import { ServiceError } from './services/errors.ts';

export interface AppOptions {
  /** Extra routes mounted before the 404 (tests register test-only tasks here; never exposed by the server). */
  extraRoutes?: (app: Hono<AppEnv>, deps: Deps) => void;
}

export function createApp(deps: Deps, opts: AppOptions = {}): Hono<AppEnv> {
  const { config, nodeTag, keys, log } = deps;
  const onError = (err: Error, c: Context<AppEnv>) => toErrorResponse(err, c, (m, e) => log.error(m, e));
  // RegExpRouter alone, not Hono's default SmartRouter: that one silently falls back to the TrieRouter, several
  // µs slower per request, when a route conflicts (a static segment registered before a `:param` in its
  // place); here such a conflict fails at startup (the compile below) and the route is written otherwise.
  // The handlers a request matches run as one (src/http/one-handler-router.ts).
  const app = new Hono<AppEnv>({ router: new OneHandlerRouter(new RegExpRouter(), onError) });
  const publicDir = findPublicDir();

  // what every request passes
  app.use('*', requestMeta(nodeTag, log));
  app.use('*', cors(config.corsOrigins));
  app.use('*', areaTicketAuth(deps.adminConsole.tickets));
  app.use('*', auth(keys, isLoopbackHost(config.host)));
  app.use('*', bodyLimit(config.maxUploadBytes));

  app.route('/', rootRoutes(nodeTag, publicDir !== null || '/index.html' in embeddedPublic));
  // Anthropic Messages gateway (its /v1/models answers only with anthropic-version, so it comes first)
  app.route('/v1', anthropicModelRoutes(deps.models));
  app.route('/v1', anthropicMessageRoutes(deps.chat, deps.log));
  // dialect A
  app.route('/v1', openaiFileRoutes(deps.files));
  app.route('/v1', openaiModelRoutes(deps.models));
  app.route(
    '/v1',
    openaiChatRoutes(deps.chat, log, deps.agents, {
      turns: deps.turns,
      dispatch: (path, init) => Promise.resolve(app.request(path, init)),
    }),
  );
  app.route('/v1', openaiCompletionRoutes(deps.chat, deps.engine, log));
  app.route('/v1', openaiEmbeddingRoutes(deps.chat, deps.runner));
  app.route('/v1', openaiAudioRoutes(deps));
  app.route('/v1', openaiResponsesRoutes(deps.responses, log, deps.agents));
  app.route('/v1', openaiVectorStoreRoutes(deps.vectorStores));
  app.route('/v1', openaiRerankRoutes(deps));
  // dialect B
  app.route('/api', versionRoutes());
  app.route('/api', ollamaModelRoutes(deps.models, deps.engine));
  app.route('/api', ollamaChatRoutes(deps.chat, log));
  app.route('/api', ollamaEmbedRoutes(deps.chat));
  app.route('/api', ollamaPsRoutes(deps.engine, deps.models));
  app.route('/api', ollamaPullRoutes(deps.models, log));
  app.route('/api', ollamaCreateRoutes(deps.models, log));
  app.route('/api', ollamaBlobRoutes(deps.models));
  // native
  app.route('/svc/v1', jobRoutes(deps.jobs));
  app.route('/svc/v1', modelFileRoutes(deps.models));
  app.route('/svc/v1', fileRoutes(deps.files));
  app.route('/svc/v1/admin', adminRoutes(deps));
  app.route('/svc/v1', pdfRoutes(deps));
  app.route('/svc/v1', pdfTrustRoutes(deps));
  app.route('/svc/v1', documentRoutes(deps));
  app.route('/svc/v1', mediaRoutes(deps));
  app.route('/svc/v1', trainingRoutes(deps));
  app.route('/svc/v1', textRoutes(deps));
  app.route('/svc/v1', imageRoutes(deps));
  app.route('/svc/v1', agentRoutes(deps.agents));
  app.route('/svc/v1', searchRoutes(deps));
  app.route('/svc/v1', memoryRoutes(deps.memory));
  // the tool-protocol server: its tools call the routes above in-process, under the caller's key
  app.route('/', mcpRoutes((path, init) => Promise.resolve(app.request(path, init)), (owner) => skillPrompts(deps.agents, owner.id)));
  opts.extraRoutes?.(app, deps);
  app.use('*', securityHeaders());
  app.use('*', serveStatic(publicDir, embeddedPublic));
  app.use('/vendor/*', serveVendor());

  app.notFound((c) => toErrorResponse(new ServiceError(404, 'not_found', `route ${c.req.method} ${c.req.path} not found`), c, log.error));
  app.onError(onError);
  app.router.match('GET', '/'); // compiles the route table now: a conflict fails here, not on a request
  return app;
}
