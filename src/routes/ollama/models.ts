/**
 * Dialect B model management: GET /api/tags, POST /api/show, POST /api/copy, DELETE /api/delete,
 * POST /api/push (always 501). Custom models carry `"unverified": true` (docs/models.md).
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import { CopyBody, NamedBody } from '../../schemas/ollama.ts';
import { invalidArgument, ServiceError } from '../../services/errors.ts';
import type { ListedModel } from '../../services/models/local.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import type { CustomModelRecord } from '../../services/models/spec.ts';
import type { InferenceEngine } from '../../services/inference/engine.ts';

/** `model` (current clients) or `name` (older ones). */
export function modelField(body: { model?: string; name?: string }): string {
  const name = body.model ?? body.name;
  if (!name?.trim()) throw invalidArgument('model is required', [{ field: 'model', message: 'required' }]);
  return name;
}

/** Where the model runs, when it is loaded (device, ONNX Runtime package, dtype, fallbacks taken). */
function backendIfLoaded(engine: InferenceEngine | undefined, name: string) {
  const r = engine?.list().find((m) => m.name === name);
  return r ? { backend: { device: r.device, runtime: r.ort, dtype: r.dtype, ...(r.notes.length ? { notes: r.notes } : {}) } } : {};
}

export const tagsEntry = (m: ListedModel) => {
  const family = m.spec.details?.family ?? '';
  return {
    name: m.name,
    model: m.name,
    ...(m.modified_at ? { modified_at: m.modified_at.toISOString() } : {}),
    size: m.size,
    digest: m.digest.replace(/^sha256:/, ''),
    details: {
      parent_model: (m.spec as Partial<CustomModelRecord>).profile?.parent ?? '',
      format: 'onnx',
      family,
      families: family ? [family] : [],
      parameter_size: m.spec.details?.parameter_size ?? '',
      quantization_level: m.spec.details?.quantization_level ?? m.spec.dtype.toUpperCase(),
    },
    ...(m.unverified ? { unverified: true } : {}),
  };
};

export function ollamaModelRoutes(models: ModelServices, engine?: InferenceEngine) {
  const app = new Hono<AppEnv>();

  app.get('/tags', async (c) => c.json({ models: (await models.list()).map(tagsEntry) }));

  app.post('/show', jsonBody(NamedBody), async (c) => {
    const s = await models.show(modelField(c.req.valid('json')));
    return c.json({
      license: s.license,
      modelfile: s.modelfile,
      parameters: s.parameters,
      template: s.template,
      system: s.system,
      details: s.details,
      model_info: s.model_info,
      capabilities: s.capabilities,
      ...(s.modified_at ? { modified_at: s.modified_at.toISOString() } : {}),
      ...(s.unverified ? { unverified: true } : {}),
      ...backendIfLoaded(engine, s.name),
    });
  });

  app.post('/copy', jsonBody(CopyBody), async (c) => {
    const body = c.req.valid('json');
    await models.copy(body.source, body.destination);
    return c.json({ status: 'success' });
  });

  app.delete('/delete', jsonBody(NamedBody), async (c) => {
    await models.delete(modelField(c.req.valid('json')));
    return c.json({ status: 'success' });
  });

  app.post('/push', () => {
    throw new ServiceError(501, 'not_implemented', 'pushing models is not supported: this server does not publish models to a registry');
  });

  return app;
}
