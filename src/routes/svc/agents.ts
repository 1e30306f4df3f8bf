/**
 * /svc/v1/agents and /svc/v1/skills: named agents (create or replace, read, list, delete) and versioned
 * skills (each POST adds a version; read the latest or one version; list; delete every version). Each is
 * private to the key that made it: another key gets 404. docs/api/agents.md.
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import type { AppEnv } from '../../http/context.ts';
import { jsonBody } from '../../http/validate.ts';
import type { AgentService } from '../../services/agents/agent-service.ts';

const name = v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-"'));
const AgentBody = v.strictObject({
  name: v.optional(name),
  model: v.optional(v.pipe(v.string(), v.minLength(1))),
  description: v.optional(v.pipe(v.string(), v.maxLength(2000))),
  instructions: v.optional(v.pipe(v.string(), v.maxLength(100_000))),
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(2))),
  top_p: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1))),
  max_tokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  seed: v.optional(v.pipe(v.number(), v.integer())),
  tools: v.optional(v.array(v.looseObject({ type: v.literal('function'), function: v.looseObject({ name: v.string() }) }))),
  tool_choice: v.optional(v.unknown()),
  skill: v.optional(name),
  server_tools: v.optional(v.array(v.union([v.string(), v.looseObject({ name: v.string() })]))),
  step_limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(32))),
  memory_store: v.optional(name),
  memory: v.optional(
    v.union([
      v.boolean(),
      v.strictObject({
        recall: v.optional(v.boolean()),
        write: v.optional(v.boolean()),
        extract: v.optional(v.picklist(['rules', 'model'])),
      }),
    ]),
  ),
});
const SkillBody = v.strictObject({
  name,
  description: v.optional(v.pipe(v.string(), v.maxLength(2000))),
  prompt: v.pipe(v.string(), v.minLength(1, 'prompt must not be empty'), v.maxLength(100_000)),
  input_schema: v.optional(v.record(v.string(), v.unknown())),
  output_schema: v.optional(v.record(v.string(), v.unknown())),
});

export function agentRoutes(agents: AgentService) {
  const app = new Hono<AppEnv>();
  const owner = (c: { get(k: 'owner'): { id: string } }) => c.get('owner').id;

  app.post('/agents', jsonBody(v.object({ ...AgentBody.entries, name })), async (c) => {
    const { name: n, ...config } = c.req.valid('json');
    const r = await agents.putAgent(owner(c), n, config);
    return c.json(r.agent, r.created ? 201 : 200);
  });
  app.put('/agents/:name', jsonBody(AgentBody), async (c) => {
    const { name: _n, ...config } = c.req.valid('json');
    const r = await agents.putAgent(owner(c), c.req.param('name'), config);
    return c.json(r.agent, r.created ? 201 : 200);
  });
  app.get('/agents', async (c) => c.json({ object: 'list', data: await agents.listAgents(owner(c)) }));
  app.get('/agents/:name', async (c) => c.json(await agents.getAgent(owner(c), c.req.param('name'))));
  app.delete('/agents/:name', async (c) => c.json(await agents.deleteAgent(owner(c), c.req.param('name'))));

  app.post('/skills', jsonBody(SkillBody), async (c) => c.json(await agents.addSkill(owner(c), c.req.valid('json')), 201));
  app.get('/skills', async (c) => c.json({ object: 'list', data: await agents.listSkills(owner(c)) }));
  app.get('/skills/:name', async (c) => {
    const ver = c.req.query('version');
    return c.json(await agents.getSkill(owner(c), c.req.param('name'), ver === undefined ? undefined : Number(ver) || -1));
  });
  app.get(
    '/skills/:name/versions',
    async (c) => c.json({ object: 'list', data: await agents.skillVersions(owner(c), c.req.param('name')) }),
  );
  app.delete('/skills/:name', async (c) => c.json(await agents.deleteSkill(owner(c), c.req.param('name'))));
  return app;
}
