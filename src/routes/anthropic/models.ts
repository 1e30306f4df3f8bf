/**
 * GET /v1/models and GET /v1/models/{id} in Anthropic's shape, answered only when the caller sends the
 * `anthropic-version` header (Anthropic's clients always do); otherwise the request falls through to the
 * dialect A route at the same path. Only chat (generation) models are listed: they are the ones the
 * Messages API can use. Paging follows Anthropic: limit (1–1000, default 20), after_id, before_id.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../../http/context.ts';
import { ServiceError } from '../../services/errors.ts';
import type { ListedModel } from '../../services/models/local.ts';
import type { ModelServices } from '../../services/models/model-services.ts';
import type { CustomModelRecord } from '../../services/models/spec.ts';

const no = { supported: false };
const yes = (b: boolean) => ({ supported: b });

/** What this server can do with the model, in Anthropic's capability vocabulary (server-side features: none). */
const capabilitiesOf = (caps: string[]) => ({
  batch: no,
  citations: no,
  code_execution: no,
  pdf_input: no,
  structured_outputs: no,
  context_management: { supported: false, clear_thinking_20251015: null, clear_tool_uses_20250919: null, compact_20260112: null },
  effort: { supported: false, low: no, medium: no, high: no, max: no, xhigh: null },
  image_input: yes(caps.includes('vision')),
  server_tools: { supported: false, code_execution: no, web_search: no },
  thinking: {
    supported: caps.includes('thinking'),
    types: { enabled: yes(caps.includes('thinking')), disabled: yes(true), adaptive: no, between_tools: no },
  },
});

const anthropicModel = (m: ListedModel) => {
  const createdAt = (m.spec as Partial<CustomModelRecord>).created_at;
  const created = m.modified_at ?? (createdAt ? new Date(createdAt) : new Date(0));
  return {
    type: 'model' as const,
    id: m.name,
    display_name: m.name,
    created_at: created.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    capabilities: capabilitiesOf(m.spec.capabilities ?? []),
    lifecycle: 'active' as const,
    deprecated_at: null,
    retires_at: null,
    line: null,
    max_input_tokens: null,
    max_tokens: null,
  };
};

const bad = (field: string, message: string) => new ServiceError(400, 'invalid_request', `${field}: ${message}`);

export function anthropicModelRoutes(models: ModelServices) {
  const app = new Hono<AppEnv>();
  const chatModels = async () => (await models.list()).filter((m) => m.spec.kind === 'generation').map(anthropicModel);
  app.get('/models', async (c, next) => {
    if (!c.req.header('anthropic-version')) return next();
    const q = c.req.query();
    const limit = q.limit === undefined ? 20 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw bad('limit', 'must be an integer from 1 to 1000');
    if (q.after_id && q.before_id) throw bad('after_id', 'cannot be combined with before_id');
    const all = await chatModels();
    const at = (id: string, field: string) => {
      const i = all.findIndex((m) => m.id === id);
      if (i < 0) throw bad(field, `"${id}" is not a listed model`);
      return i;
    };
    let page;
    if (q.before_id) {
      const end = at(q.before_id, 'before_id');
      page = all.slice(Math.max(0, end - limit), end);
      return c.json({ data: page, has_more: end - limit > 0, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null });
    }
    const from = q.after_id ? at(q.after_id, 'after_id') + 1 : 0;
    page = all.slice(from, from + limit);
    return c.json({ data: page, has_more: from + limit < all.length, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null });
  });
  app.get('/models/:id{.+}', async (c, next) => {
    if (!c.req.header('anthropic-version')) return next();
    const id = c.req.param('id');
    const found = (await chatModels()).find((m) => m.id === id) ??
      (await chatModels()).find((m) => m.id === models.catalog.resolve(id)?.name);
    if (!found) throw new ServiceError(404, 'model_not_found', `model: ${id}`);
    return c.json(found);
  });
  return app;
}
