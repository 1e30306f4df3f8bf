/**
 * POST/GET/DELETE /mcp: the MCP server over Streamable HTTP, stateless (a fresh server and transport per
 * request, so any node of a fleet can answer). Authentication has already run: the caller's credentials
 * are forwarded to the routes its tool calls reach.
 */
import { Hono } from 'hono';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { AppEnv } from '../../http/context.ts';
import type { Dispatch } from '../../services/tools/tool-call.ts';
import { createMcpServer, type PromptSource } from './mcp-server.ts';
import type { Owner } from '../../services/keys/api-keys.ts';
import type { AgentService } from '../../services/agents/agent-service.ts';

export function mcpRoutes(dispatch: Dispatch, promptsFor?: (owner: Owner) => PromptSource) {
  const app = new Hono<AppEnv>();
  app.all('/mcp', async (c) => {
    const headers: Record<string, string> = {};
    for (const h of ['authorization', 'x-api-key']) {
      const v = c.req.header(h);
      if (v) headers[h] = v;
    }
    const server = createMcpServer({ dispatch, headers, prompts: promptsFor?.(c.get('owner')) });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    return transport.handleRequest(c.req.raw);
  });
  return app;
}

/** A key's skills as MCP prompts: the latest versions, arguments from each input schema's properties. */
export function skillPrompts(agents: AgentService, owner: string): PromptSource {
  return {
    async list() {
      return (await agents.listSkills(owner)).map((s) => {
        const schema = s.input_schema as { properties?: Record<string, { description?: string }>; required?: string[] };
        return {
          name: s.name,
          ...(s.description ? { description: s.description } : {}),
          arguments: Object.entries(schema.properties ?? {}).map(([name, p]) => ({
            name,
            ...(p?.description ? { description: p.description } : {}),
            required: schema.required?.includes(name) ?? false,
          })),
        };
      });
    },
    async get(name, args) {
      // prompt arguments arrive as strings; a skill's typed inputs are parsed back where they are JSON
      const inputs: Record<string, unknown> = {};
      const skill = await agents.getSkill(owner, name);
      const props = (skill.input_schema as { properties?: Record<string, { type?: string }> }).properties ?? {};
      for (const [k, val] of Object.entries(args)) {
        const t = props[k]?.type;
        inputs[k] = t && t !== 'string'
          ? (() => {
            try {
              return JSON.parse(val);
            } catch {
              return val;
            }
          })()
          : val;
      }
      const r = await agents.renderSkill(owner, name, inputs);
      return { ...(r.description ? { description: r.description } : {}), messages: [{ role: 'user', text: r.text }] };
    },
  };
}
